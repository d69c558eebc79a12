// A topology file read on the node it describes (plugstack topology=,
// gputopo-launch --topology): what the file cannot say, from this node's
// sysfs: NIC device names by PCI address (nic_names.hpp) and SMT pairs
// (smt_siblings.hpp, only when sysfs knows exactly the file's CPUs).
// Never throws. root "" = "/".
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

void refine_file_on_this_node(Node& node, const std::string& root = "");

}  // namespace gputopo
