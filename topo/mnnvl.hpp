// Multi-node NVLink (MNNVL, GB200/GB300 NVL72) readiness: what makes NCCL
// turn multi-node NVLink off without an error, so that every cross-tray
// transfer goes over the NICs. NCCL uses MNNVL only with cuMem (fabric
// handles), an IMEX channel the process can open, and GPUs whose fabric
// probe completed in one clique; its own error ("Check the IMEX channel
// configuration") comes only when an import fails. One line per problem,
// naming what NCCL will do and the fix. Used by `gputopo doctor --mnnvl` and,
// for the part a task can see cheaply, at step start by the plugin.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gputopo {

// Where Slurm's switch/nvidia_imex (or a per-job IMEX daemon) puts the job's
// channels (channelN, character devices).
inline constexpr const char* kImexChannelsDir = "/dev/nvidia-caps-imex-channels";

// The IMEX channels in `dir` (entries channelN) and how many this process may
// open (access(2) R+W). At most 4096 entries are looked at.
struct ImexChannels {
    bool dir_present = false;
    int present = 0;
    int openable = 0;
};
ImexChannels probe_imex_channels(const std::string& dir);

// One GPU's NVML fabric facts (topo/sources/nvml_source.hpp NvmlGpuInfo).
struct FabricGpu {
    std::string pci;                // for messages
    int state = -1;                 // nvmlGpuFabricState_t: 3 completed; <=0 not a fabric GPU
    int status = -1;                // nvmlReturn_t of the probe
    long health_mask = -1;          // v2+, -1 unknown
    int health_summary = -1;        // v3, -1 unknown
    std::string cluster_uuid;       // "" until completed
    int clique = -1;
    // Fabric info v4 (NVML v615+): every (type, id) clique, empty before v4.
    std::vector<std::pair<int, unsigned>> cliques = {};
};

struct MnnvlInputs {
    std::vector<FabricGpu> gpus;    // empty: the fabric part is not checked (step start)
    ImexChannels imex;
    std::string imex_dir = kImexChannelsDir;
    std::optional<std::string> nccl_cumem_enable;  // the user's NCCL_CUMEM_ENABLE
    std::optional<std::string> nccl_mnnvl_enable;  // the user's NCCL_MNNVL_ENABLE
    // Other nodes' "CLUSTERUUID/CLIQUE" that must agree with this node's (the
    // step's nodes; doctor --clique); a clique of 32766 is NVIDIA's sentinel
    // shared by unrelated racks, so agreement is on the pair.
    std::vector<std::string> peers;
};

// The fabric part's "cluster/clique" pairs of the completed GPUs, sorted.
std::vector<std::string> fabric_cliques(const std::vector<FabricGpu>& gpus);

// The healthMask conditions that hold ("degraded bandwidth", "route recovery
// in progress", "route unhealthy", "access timeout recovery"); empty: clean.
std::vector<std::string> fabric_health_problems(long health_mask);

// Every problem, one line each; empty when MNNVL is ready.
std::vector<std::string> mnnvl_problems(const MnnvlInputs& in);

}  // namespace gputopo
