// gputopo doctor: a preflight of one node. Reads what the node looks like now
// (hwloc, NVML, NIC port state) and checks it against a known-good reference
// (a topology file of the same node type) or, without one, against itself:
//   nvml     the driver answers where there are NVIDIA GPUs
//   gpus     every expected GPU is visible to the driver, none is lost
//   nvlink   NVLinks up as expected (or: no GPU with some links down)
//   fabric   multi-node NVLink (NVL72) registration complete, one clique
//   mnnvl    (--mnnvl) what NCCL needs for multi-node NVLink: IMEX channel,
//            fabric state and health mask, cliques, NCCL_CUMEM/MNNVL_ENABLE
//   nics     RDMA ports ACTIVE at the expected rate; fallbacks named
//   numa     each GPU's CPU affinity sane and as expected
//   health   uncorrectable ECC, row-remap failures / pending, retired pages
// Each check is ok, warn, fail or skip. Exit code: 0 when nothing failed, 1
// otherwise. The CLI (gputopo doctor) prints doctor_table() or doctor_json();
// the launcher runs it as a command through --preflight.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topo/core/model.hpp"
#include "topo/sources/nic_policy.hpp"
#include "topo/sources/nvml_source.hpp"
#include "topo/sources/source_merge.hpp"

namespace gputopo {

enum class CheckStatus { Ok, Warn, Fail, Skip };
const char* check_status_name(CheckStatus s);  // "ok", "warn", "fail", "skip"

struct DoctorCheck {
    std::string name;                  // nvml, gpus, nvlink, fabric, nics, numa, health
    CheckStatus status = CheckStatus::Ok;
    std::string summary;               // one line
    std::vector<std::string> details;  // one line per finding
};

struct DoctorInputs {
    // Reference: a topology file (hwloc XML, NCCL XML, `gputopo nccl-topo`
    // output) of a healthy node of this type, or the model itself. Neither:
    // checks that need a reference compare the node with itself.
    std::string expect_file;
    std::optional<Node> expected;
    // What hwloc sees; default: this machine (live discovery). Tests and
    // offline use may give a topology file or a model instead.
    std::string base_topology_file;
    std::optional<Node> base;
    LiveSources live;  // NVML library, sysfs root, storage NICs
    NicPolicy nic_policy;  // the site's NIC include/exclude lists (topo/sources/nic_policy.hpp)
    // --mnnvl: the "mnnvl" check (topo/mnnvl.hpp): IMEX channel, fabric state and
    // health, clique agreement with `peers`, the NCCL variables that turn MNNVL off.
    bool mnnvl = false;
    std::string imex_dir;                           // "" = kImexChannelsDir
    std::optional<std::string> nccl_cumem_enable;   // the environment's NCCL_CUMEM_ENABLE
    std::optional<std::string> nccl_mnnvl_enable;   // the environment's NCCL_MNNVL_ENABLE
    std::vector<std::string> peers;                 // other nodes' "CLUSTERUUID/CLIQUE"
};

struct DoctorReport {
    std::vector<DoctorCheck> checks;
    Node observed;                     // the merged model the checks looked at
    std::string reference;             // what it was compared with ("" none)
    bool nvml_available = false;
    std::string driver_version;

    bool ok() const;                   // no check failed
    int exit_code() const { return ok() ? 0 : 1; }
    const DoctorCheck* check(const std::string& name) const;
    std::string summary() const;       // "gputopo doctor: FAIL (nvlink, health); 5 ok, 1 warn"
};

// Never throws: problems reading the node or the reference are failed checks.
DoctorReport run_doctor(const DoctorInputs& inputs);

std::string doctor_table(const DoctorReport& report);
std::string doctor_json(const DoctorReport& report);

}  // namespace gputopo
