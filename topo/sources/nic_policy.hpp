// The site's NIC policy: which NICs carry GPU traffic. The same lists in
// plugstack.conf (nic_include=, nic_exclude=), on the CLI (--nic-include,
// --nic-exclude: `gputopo plan` shows what the plugin does) and in `doctor`.
// A NIC the policy leaves out is treated as a storage NIC (Nic::storage):
// never in the plan, NCCL_IB_HCA, UCX_NET_DEVICES or the libfabric variables.
//   include: only these NICs (every other NIC is left out); empty: all.
//   exclude: never these (applied after include).
// Each name is an RDMA device (mlx5_4), a netdev (bond0, ib3) or a PCI bus id
// (0000:d2:00.0), as --storage-nics takes them.
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"

namespace gputopo {

struct NicPolicy {
    std::vector<std::string> include;
    std::vector<std::string> exclude;
    bool empty() const { return include.empty() && exclude.empty(); }
};

// "mlx5_0,ib3,0000:d2:00.0" -> names. Strict: throws ParseError naming
// `what` (e.g. "plugstack.conf: nic_exclude=") for an empty list, an empty
// item, a repeated item or a character outside [A-Za-z0-9_.:-].
std::vector<std::string> parse_nic_list(const std::string& value, const std::string& what);

// The NIC is `name` (RDMA device, one of its netdevs, or its PCI bus id).
bool nic_matches(const Nic& nic, const std::string& name);

// Applies the policy; returns one message per name that matched no NIC of
// the node (a cluster-wide list may name NICs some nodes lack).
std::vector<std::string> apply_nic_policy(Node& node, const NicPolicy& policy);

}  // namespace gputopo
