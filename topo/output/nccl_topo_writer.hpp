// Writes a node model as an NCCL topology file (NCCL_TOPO_FILE): the XML
// NCCL itself dumps (<system version="1"> with cpu / pci / gpu / nvlink /
// xgmi / nic / net), for containers and VMs where NCCL cannot see the real
// PCI tree or NVLink layout (NVIDIA/nccl#1464, #1674).
//
// Mapping (the inverse of topo/sources/nccl_xml_source.cpp):
//  - one <cpu numaid affinity arch> per NUMA node with CPUs;
//  - below it, as NCCL walks sysfs: PCIe switches (upstream ports) as
//    <pci class="0x060400">, root ports and switch downstream ports left out,
//    GPUs and NICs as <pci> with their class, vendor and device ids; bus ids
//    lowercase dddd:bb:dd.f. Only GPUs, NICs and the switches above them are
//    written. NCCL's format has one level for "through the CPU": devices
//    below different root ports of one host bridge (nvidia-smi's PHB) and
//    below different host bridges of one NUMA node (NODE) look alike;
//  - <gpu> holds one <nvlink target=PEER count=N tclass="0x030200"> per
//    directly linked GPU, one <nvlink target="fffffff:ff:ff.0" count=N
//    tclass="0x068000"> for NVSwitch-connected GPUs (NCCL merges all
//    NVSwitches into one node; N = the GPU's switched links), <xgmi> for AMD;
//  - <nic><net name=RDMA-DEVICE port=P speed=Mb/s/></nic> per NIC port;
//    socket (non-RDMA) interfaces with port="0". NICs without a PCI position
//    sit directly under their <cpu> (under every <cpu> when their NUMA node
//    is unknown).
// Attributes NCCL fills in from the machine it runs on are left out (GPU
// dev/sm/rank/gdr, PCI link speed and width, CPU vendor and model), so NCCL
// takes the real values where it can see them.
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

std::string nccl_topology_xml(const Node& node);

// Writes nccl_topology_xml(node) to `path` (atomically: a temporary file in
// the same directory, then rename). Throws TopologyError naming the path.
void write_nccl_topology_file(const Node& node, const std::string& path);

}  // namespace gputopo
