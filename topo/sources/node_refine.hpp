// A topology file read on the node it describes (plugstack topology=,
// gputopo-launch --topology): what the file cannot say, from this node's
// sysfs: NIC device names by PCI address (nic_names.hpp) and SMT pairs
// (smt_siblings.hpp, only when sysfs knows exactly the file's CPUs).
// Never throws. root "" = "/".
#pragma once

#include <string>

#include "topo/core/model.hpp"
#include "topo/sources/nic_policy.hpp"

namespace gputopo {

void refine_file_on_this_node(Node& node, const std::string& root = "");

// The node a step binds against, once read: a file read on this node refined
// from sysfs (above), then the site's NIC policy (nic_policy.hpp). The one
// finishing step of the plugin and the launcher alike. Never throws.
void finish_step_node(Node& node, bool from_file, const NicPolicy& policy);

}  // namespace gputopo
