// Internal to the hwloc reader: GPU-GPU links from hwloc's distance matrices
// (NVLinkBandwidth, XGMIBandwidth, XGMIHops).
#pragma once

#include <hwloc.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "topo/core/model.hpp"

namespace gputopo::hwloc_detail {

// gpu_of_obj maps hwloc objects (GPU OS devices, GPU PCI functions) to
// positions in node.gpus (before finalize); gpu_model is the model by
// position. Appends to node.links.
void add_links_from_distances(hwloc_topology_t topology, const std::unordered_map<hwloc_obj_t, int>& gpu_of_obj,
                              const std::vector<std::string>& gpu_model, Node& node);

// Bandwidth of one NVLink, one direction, in MB/s, as hwloc's NVML backend
// counts it, by GPU generation (from the model name).
double nvlink_mbps_per_link(const std::string& model);

}  // namespace gputopo::hwloc_detail
