#include "topo/sources/node_refine.hpp"

#include "topo/sources/nic_names.hpp"
#include "topo/sources/smt_siblings.hpp"

namespace gputopo {

void refine_file_on_this_node(Node& node, const std::string& root) {
    resolve_nic_names(node, root);
    cores_from_sysfs(node, root);
}

void finish_step_node(Node& node, bool from_file, const NicPolicy& policy) {
    if (from_file) refine_file_on_this_node(node);
    apply_nic_policy(node, policy);
}

}  // namespace gputopo
