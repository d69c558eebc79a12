#include "topo/sources/node_refine.hpp"

#include "topo/sources/nic_names.hpp"
#include "topo/sources/smt_siblings.hpp"

namespace gputopo {

void refine_file_on_this_node(Node& node, const std::string& root) {
    resolve_nic_names(node, root);
    cores_from_sysfs(node, root);
}

}  // namespace gputopo
