// A node model saved as compact text, for the cache: reading it back costs
// well under a millisecond where re-parsing a large hwloc XML costs tens.
// Line-oriented, tab-separated, fields percent-escaped; the first line names
// the format version. Round-trips every field of topo/core/model.hpp.
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

std::string write_node_snapshot(const Node& node);

// Throws TopologyError naming `name` on anything that is not a snapshot of
// this version, including one whose indices (PCI parents, a GPU's or NIC's PCI
// object, NUMA nodes, packages, link endpoints) point nowhere.
Node read_node_snapshot(const std::string& text, const std::string& name);

}  // namespace gputopo
