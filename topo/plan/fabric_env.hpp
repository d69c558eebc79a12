// What each fabric's software stack reads to choose a task's NIC, from the
// same nearest-NIC plan (topo/plan/nic_selection.hpp). Pure.
//
// The fabric of a NIC: topo/core/nic_fabric.hpp (EFA, CXI, else Verbs).
// A node's fabric is the fabric of all its usable NICs (node_nics); a node
// whose NICs mix fabrics is Verbs for the verbs NICs only (the others are
// left out of NCCL_IB_HCA / UCX_NET_DEVICES and get no libfabric variable).
//
// Variables (each user_wins: a value the user set is kept):
//  - Verbs: NCCL_IB_HCA, UCX_NET_DEVICES (task_env.hpp), never for EFA/CXI.
//  - EFA: FI_PROVIDER=efa (fabric(7)); FI_EFA_IFACE = the task's EFA devices,
//    nearest first (fi_efa(7): "names that should be visible to the
//    application ... to enforce process affinity based on the hardware
//    topology").
//  - CXI: FI_PROVIDER=cxi; FI_CXI_DEVICE_NAME = the task's cxiN devices
//    (fi_cxi(7): "Restrict CXI provider to specific CXI devices"). Cray
//    MPICH and aws-ofi-nccl open only what the provider shows, so
//    MPICH_OFI_NIC_POLICY/MPICH_OFI_NIC_MAPPING are not needed and not set.
// Only device names count: a NIC known only by its PCI address or by a
// netdev name (hsi0 on Slingshot hwloc files) is never written as a device.
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"
#include "topo/core/nic_fabric.hpp"
#include "topo/plan/planner.hpp"
#include "topo/core/env_var.hpp"
#include "topo/core/strings.hpp"

namespace gputopo {

// The fabric of the node's usable NICs `nics` (plan.node_nics): Efa or Cxi
// when every one is; Verbs otherwise (also when there are none).
Fabric node_fabric(const Node& node, const std::vector<std::string>& nics);

// The names of `nics` that are usable device names of fabric `f` (for CXI:
// cxiN devices), in the given order.
std::vector<std::string> fabric_devices(const Node& node, const std::vector<std::string>& nics, Fabric f);

// The libfabric variables for a task whose planned NICs are `task_nics`, on
// a node whose fabric is `f`; empty for Verbs.
std::vector<EnvVar> fabric_env(const Node& node, Fabric f, const std::vector<std::string>& task_nics);

// One message (or none) naming the usable NICs of `plan` that have no device
// name (nic_names.hpp could not name them from sysfs), for the step's warning
// and the CLI.
std::vector<std::string> unnamed_nic_warnings(const Node& node, const Plan& plan);

}  // namespace gputopo
