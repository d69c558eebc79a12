// Internal to the hwloc reader: turns a loaded hwloc topology into the node
// model. Only topo/hwloc_*.cpp include this (it pulls in <hwloc.h>).
#pragma once

#include <hwloc.h>

#include <string>

#include "topo/core/model.hpp"

namespace gputopo::hwloc_detail {

// Builds and finalizes a Node from a loaded topology. `source` goes to
// Node::source ("hwloc XML /path.xml", "this machine").
Node convert_topology(hwloc_topology_t topology, const std::string& source);

// GPU rule, shared with the tests through the public behaviour: a PCI
// function is a GPU when its class is a display/3D/accelerator class
// (0300, 0302, 0380, 1200) and its vendor makes GPUs; BMC display chips
// are not GPUs. `has_compute_osdev`: hwloc saw a CUDA/OpenCL/Level Zero/
// NVML/RSMI device on it.
bool is_gpu_class(unsigned class_id);  // 0300 VGA, 0302 3D, 0380 display, 1200 accelerator
bool is_gpu_function(unsigned class_id, unsigned vendor_id, unsigned device_id, bool has_compute_osdev);

}  // namespace gputopo::hwloc_detail
