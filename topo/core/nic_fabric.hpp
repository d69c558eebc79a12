// What a NIC is, from its PCI ids (else its device name): the fabric whose
// software stack drives it, and whether its name is a device name at all.
// Facts about the model, read by the sources (nic_names: which NICs sysfs must
// name) and by the planner (plan/fabric_env: what each fabric reads). Pure.
//  - EFA: Amazon (0x1d0f) devices 0xefa0-0xefaf (the kernel's efa driver
//    table), used through libfabric's efa provider (NCCL via aws-ofi-nccl);
//  - CXI: HPE/Cray (0x17db) Cassini, or a device named cxiN (Slingshot 11),
//    used through libfabric's cxi provider;
//  - Verbs: everything else (InfiniBand, RoCE): NCCL's IB transport and UCX.
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

enum class Fabric { Verbs, Efa, Cxi };
const char* fabric_name(Fabric f);  // "verbs", "efa", "cxi"

Fabric nic_fabric(const Node& node, const Nic& nic);

// A name NCCL, UCX or libfabric can match: not empty and not a PCI address.
bool is_device_name(const std::string& name);

// A Slingshot CXI device name: "cxi" and digits (cxi0), not a netdev (hsi0).
bool is_cxi_device_name(const std::string& name);

}  // namespace gputopo
