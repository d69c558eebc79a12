// The one place where live sources refine a node model read by hwloc (or
// from a file): NVML (names, uuids, memory, NVLinks and NVSwitches, fabric
// cliques) and NIC port state (sysfs), keyed by PCI bus id / RDMA device
// name; plus the site's storage NICs. Missing sources leave the model as it
// was. Nothing here throws for an absent library, driver or sysfs.
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"
#include "topo/sources/nic_state.hpp"
#include "topo/sources/nvml_source.hpp"

namespace gputopo {

// NVML into the model:
//  - each NVML GPU is matched by bus id (a GPU hwloc missed is added, with a
//    warning); name, uuid, memory, NVML CPU affinity (when the model has
//    none), "nvmlN" device name, fabric cluster uuid + clique;
//  - NVLinks: active links to a peer GPU give a direct link (count = active
//    links); GPUs with active links to NVSwitches are all joined through
//    them (via_switch, count = the smaller of the two GPUs' switch links);
//    these replace the NVLink links the model had between NVML's GPUs, so a
//    link that is down is no longer counted.
// Not available: the model is unchanged (a warning when it has NVIDIA GPUs).
void merge_nvml(Node& node, const NvmlSnapshot& nvml);

// NIC port state into the model, by RDMA device name (else PCI bus id):
// ports (state, link layer, rate, RoCE v2 GID index), speed; an RDMA device
// hwloc missed is added. An Ethernet RDMA device whose readable GID table has
// no RoCE v2 GID on any active port (no IP address: plain management
// Ethernet) is not used for GPU traffic (rdma = false) and says so.
void merge_nic_state(Node& node, const std::vector<NicState>& nics);

// Marks NICs as storage (never used for GPU traffic): each name may be an
// RDMA device (mlx5_4), a netdev (ib3) or a PCI bus id. Returns the names
// that matched nothing (for a warning).
std::vector<std::string> mark_storage_nics(Node& node, const std::vector<std::string>& names);

// What to read on this machine besides hwloc.
struct LiveSources {
    bool nvml = true;
    std::string nvml_library;            // "" = libnvidia-ml.so.1
    double nvml_timeout_s = kDefaultNvmlTimeoutS;  // nvml_source.hpp read_nvml
    bool nic_state = true;
    std::string sysfs_root;              // "" = "/"
    std::vector<std::string> storage_nics;
};

// Refines `node` (this machine's model) with the live sources; never throws.
// Returns false when NVML was asked for and gave nothing that can be kept: it
// did not answer in time, or it failed on a node with NVIDIA GPUs (a driver
// still loading, a transient hang): the node is then hwloc's view for now only
// (step/topology_cache keeps such a node for a short while, issue 33, finding 8).
// Reads only: which GPUs lost their nearest NIC is the planner's to say
// (topo/plan/nic_selection.hpp add_nic_fallback_warnings, called by the front
// ends that show a node's warnings).
bool apply_live_sources(Node& node, const LiveSources& sources);

// The defaults with the NVML library from $GPUTOPO_NVML_LIBRARY: for the
// front ends the user runs (CLI, launcher), never for the plugin.
LiveSources live_sources_from_environment();

// This machine: hwloc (throws TopologyError as discover_this_machine does)
// refined by apply_live_sources. When those were incomplete and `problem` is
// given, it gets the warnings they added (NVML did not answer in time, ...).
Node discover_live(const LiveSources& sources = LiveSources(), std::string* problem = nullptr);

}  // namespace gputopo
