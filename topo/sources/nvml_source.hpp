// NVML source: what the NVIDIA driver says about this machine's GPUs, read
// through libnvidia-ml.so.1 loaded at run time (dlopen; nothing links it).
// No library, no driver or no GPU is not an error: the snapshot says "not
// available" and why, and the model keeps what hwloc gave. Never throws.
// Merging into the model happens in topo/sources/source_merge.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "topo/core/cpuset.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/pci_address.hpp"

namespace gputopo {

enum class NvlinkRemote { Gpu, Switch, Cpu, Unknown };

struct NvmlLinkInfo {
    int link = 0;                 // NVLink index on the GPU
    bool active = false;
    NvlinkRemote remote = NvlinkRemote::Unknown;
    bool remote_pci_known = false;
    PciAddress remote_pci;
    // Error counters (DL replay, recovery, CRC flit, CRC data); -1 unknown.
    int64_t replay_errors = -1;
    int64_t recovery_errors = -1;
    int64_t crc_flit_errors = -1;
    int64_t crc_data_errors = -1;
};

struct NvmlHealth {
    // -1 = unknown / not supported on this GPU.
    int64_t ecc_uncorrected_volatile = -1;
    int64_t ecc_corrected_volatile = -1;
    int64_t retired_pages_sbe = -1;
    int64_t retired_pages_dbe = -1;
    int retired_pages_pending = -1;   // 1 pending, 0 none
    int64_t remapped_rows_correctable = -1;
    int64_t remapped_rows_uncorrectable = -1;
    int remap_pending = -1;
    int remap_failure = -1;
};

struct NvmlGpuInfo {
    unsigned nvml_index = 0;
    PciAddress pci;
    unsigned pci_vendor_id = 0;
    unsigned pci_device_id = 0;
    int minor = -1;               // /dev/nvidiaN
    std::string name;
    std::string uuid;
    std::vector<std::string> mig_uuids;  // UUIDs of its MIG instances (MIG mode on), NVML's order
    uint64_t memory_bytes = 0;
    CpuSet cpus;                  // CPU affinity (NVML's ideal CPUs); empty when unknown
    std::vector<NvmlLinkInfo> links;  // only the links NVML reports (state query succeeded)
    // Fabric (multi-node NVLink): state 3 = completed; uuid "" when not reported.
    int fabric_state = -1;        // -1 unknown / not supported
    int fabric_status = -1;       // nvmlReturn_t of the probe, when completed
    std::string fabric_cluster_uuid;  // canonical 8-4-4-4-12 lowercase hex
    int fabric_clique = -1;
    int fabric_version = 0;       // the newest nvmlGpuFabricInfo version read: 4, 3, 2, 1 (the old call); 0 none
    long fabric_health_mask = -1; // healthMask (v2+), -1 unknown
    int fabric_health_summary = -1;  // healthSummary (v3+), -1 unknown
    // v4: every clique the GPU is in, (type, id) as NVML lists them (by type, then id);
    // empty before v4. fabric_clique (the legacy id) still keys the island.
    std::vector<std::pair<int, unsigned>> fabric_cliques;
    NvmlHealth health;
    std::vector<std::string> errors;  // per-GPU NVML failures worth reporting
};

struct NvmlSnapshot {
    bool available = false;
    bool timed_out = false;       // NVML did not answer within the timeout (read_nvml)
    std::string reason;           // why not available (library, driver, no GPU, ...)
    std::string library;          // what was loaded
    std::string driver_version;
    std::vector<NvmlGpuInfo> gpus;
    std::vector<std::string> warnings;

    const NvmlGpuInfo* find(const PciAddress& pci) const;
};

// Environment variable naming the NVML library to load instead of
// libnvidia-ml.so.1, honoured only by the front ends the user runs (the CLI,
// the launcher; tests point it at the fake library). The plugin, which loads
// NVML as root, never reads it: its library comes from plugstack.conf nvml=.
inline constexpr const char* kNvmlLibraryEnv = env::kNvmlLibrary;

// How long NVML may take to answer (nvmlInit and every query together)
// before gputopo goes on without it: plugstack.conf nvml_timeout=, default 10 s.
inline constexpr double kDefaultNvmlTimeoutS = 10;
inline constexpr double kMaxNvmlTimeoutS = 600;

// $GPUTOPO_NVML_TIMEOUT: seconds, for the CLI and the launcher (as
// GPUTOPO_NVML_LIBRARY); the plugin's comes from plugstack.conf nvml_timeout=.
inline constexpr const char* kNvmlTimeoutEnv = env::kNvmlTimeout;
// kDefaultNvmlTimeoutS when unset or not a number of seconds in (0, 600].
double nvml_timeout_from_environment();

// $GPUTOPO_NVML_LIBRARY (through secure_getenv: unset in a setuid or
// otherwise secure-execution process), "" when unset.
std::string nvml_library_from_environment();

// Reads every GPU NVML sees. `library`: a path or soname; "" means
// "libnvidia-ml.so.1". Never reads the environment. Never throws.
// Bounded (issue 20, H6): NVML runs in a thread; when it has not answered
// within `timeout_s`, the snapshot is "not available" with the reason, the
// thread is left behind (a call stuck in the driver cannot be cancelled), and
// every later call in this process answers at once without touching NVML.
NvmlSnapshot read_nvml(const std::string& library = "", double timeout_s = kDefaultNvmlTimeoutS);

}  // namespace gputopo
