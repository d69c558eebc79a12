// Reads a topology file, recognising its format from the content: hwloc XML
// (1.x and 2.x) or NCCL/RCCL topology XML (<system version="1">).
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

// Throws TopologyError with one clear message naming the file and what was
// expected: missing/unreadable file, not XML, XML that is not a topology,
// hwloc 3.0 XML, a topology with no GPUs.
Node load_topology_file(const std::string& path);

// Live discovery of this machine (hwloc, I/O devices included).
Node discover_this_machine();

}  // namespace gputopo
