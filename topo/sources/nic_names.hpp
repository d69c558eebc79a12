// A NIC's device name from sysfs by its PCI address, for topologies that
// give only addresses (Azure's ND H100 v5 NCCL_TOPO_FILE: NCCL_IB_HCA and
// UCX_NET_DEVICES cannot match "0101:00:00.0") or only a netdev (Slingshot's
// hsiN in hwloc files, where libfabric wants cxiN). On the node itself, under
// ROOT/sys/bus/pci/devices/ADDR/:
//   infiniband/<dev>  the RDMA device (mlx5_0, rdmap16s27 on EFA): the name;
//   cxi/<dev>         the Slingshot CXI device (cxi0): the name;
//   net/<dev>         netdevs (ib0, hsn0): added to Nic::netdevs; the name
//                     only for a NIC without RDMA (a netdev is not a verbs name).
// A NIC that keeps no device name is never written as a device
// (topo/core/nic_fabric.hpp is_device_name) and gets one warning per node
// (topo/plan/fabric_env.hpp unnamed_nic_warnings).
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"

namespace gputopo {

struct SysfsNicNames {
    std::vector<std::string> rdma;     // infiniband/*
    std::vector<std::string> cxi;      // cxi/*
    std::vector<std::string> netdevs;  // net/*
};

// What sysfs names for the PCI function `pci`; empty lists when it is not
// there. Never throws. root "" = "/".
SysfsNicNames read_sysfs_nic_names(const std::string& root, const PciAddress& pci);

// Names the node's NICs that have no device name (or, on Slingshot, only a
// netdev) from sysfs; returns how many were renamed.
int resolve_nic_names(Node& node, const std::string& root = "");

}  // namespace gputopo
