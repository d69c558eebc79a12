// The node model: pure data describing one GPU node. Every topology source
// (hwloc XML or live, NCCL XML, NVML, NIC sysfs) produces or refines a Node;
// the planner and every front end read only this. No hwloc, NVML, Slurm or OS
// calls here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topo/core/cpuset.hpp"
#include "topo/core/pci_address.hpp"

namespace gputopo {

enum class Vendor { Nvidia, Amd, Intel, Other };
const char* vendor_name(Vendor v);  // "nvidia", "amd", "intel", "other"
Vendor vendor_from_pci_id(unsigned vendor_id);

struct Package {
    int os_index = -1;
    CpuSet cpus;
};

struct NumaNode {
    int os_index = -1;
    CpuSet cpus;               // empty for memory-only nodes (GPU memory, CXL)
    uint64_t memory_bytes = 0;
};

struct Core {
    int package = -1;          // Package::os_index
    int numa = -1;             // NumaNode::os_index
    CpuSet pus;                // the SMT siblings of this core (OS PU indices)
};

enum class PciKind { HostBridge, Bridge, Device };

// One object of the PCI tree. Host bridges are roots; bridges are PCIe
// switches' ports / root ports; devices are leaves (GPUs, NICs, NVSwitches...).
struct PciObject {
    PciKind kind = PciKind::Device;
    int parent = -1;           // index into Node::pci; -1 for roots
    bool has_address = false;  // host bridges and hand-written files may lack one
    PciAddress address;
    unsigned class_id = 0;     // e.g. 0x0302 (3D controller), 0x0207 (IB), 0x0604 (bridge)
    unsigned vendor_id = 0;
    unsigned device_id = 0;
    int numa = -1;             // nearest NUMA node OS index, -1 unknown
    CpuSet local_cpus;         // may be empty when unknown
};

struct Gpu {
    int index = -1;            // position in PCI bus-id order among the node's GPUs
    Vendor vendor = Vendor::Other;
    std::string model;         // e.g. "NVIDIA H100 80GB HBM3", "" when unknown
    PciAddress pci;
    int pci_object = -1;       // index into Node::pci, -1 when the source had no tree
    int numa = -1;             // OS index of the nearest NUMA node with CPUs, -1 unknown
    CpuSet local_cpus;         // empty when unknown
    std::vector<std::string> os_names;  // "nvml0", "cuda0", "rsmi0", "card1", "renderD128", ...
    std::string uuid;
    std::vector<std::string> mig_uuids;  // "MIG-..." of its MIG instances (NVML), in NVML's order
    uint64_t memory_bytes = 0;
    // Multi-node NVLink (NVML fabric info): GPUs with the same cluster uuid and
    // clique id share NVLink across nodes (an NVL72 rack).
    std::string fabric_cluster_uuid;
    int fabric_clique = -1;
};

struct NicPort {
    int number = 1;
    std::string state;         // "ACTIVE", "DOWN", "INIT", ... ; "" unknown
    std::string link_layer;    // "InfiniBand", "Ethernet"; "" unknown
    double rate_gbps = 0;      // 0 unknown
    int roce_v2_gid_index = -1;  // for Ethernet link layer, -1 unknown
};

struct Nic {
    std::string name;          // RDMA device name as NCCL/UCX use it (mlx5_0, cxi0, rdmap...), or netdev name when no RDMA device
    std::vector<std::string> netdevs;  // ib0, ens1f0np0, hsn0, ...
    PciAddress pci;
    int pci_object = -1;
    int numa = -1;
    CpuSet local_cpus;
    std::vector<NicPort> ports;
    bool rdma = false;         // has an RDMA device (verbs, cxi, efa)
    bool storage = false;      // site marked it as storage: never used for GPU traffic
    double speed_gbps = 0;     // 0 unknown

    // An RDMA NIC for GPU traffic: RDMA, not storage, and not known to be down
    // (at least one port active, or port state unknown).
    bool usable() const;
};

enum class LinkKind { NVLink, XGMI, C2C };
const char* link_kind_name(LinkKind k);  // "nvlink", "xgmi", "c2c"

// A GPU-to-GPU link, direct or through switches (NVSwitch). One entry per
// unordered pair, a < b.
struct GpuLink {
    int a = -1, b = -1;        // GPU indices
    LinkKind kind = LinkKind::NVLink;
    int count = 0;             // bonded links, as nvidia-smi's NV# counts them
    double bandwidth_gbps = 0; // 0 unknown
    bool via_switch = false;
};

struct Node {
    std::string hostname;
    std::string source;        // what it was read from, for messages ("hwloc XML /x.xml", "this machine")
    std::vector<Package> packages;
    std::vector<NumaNode> numa_nodes;   // sorted by os_index
    std::vector<Core> cores;            // empty when the source does not know cores (NCCL XML)
    CpuSet cpus;                        // every PU of the node
    std::vector<PciObject> pci;
    std::vector<Gpu> gpus;              // sorted by PCI address; gpus[i].index == i
    std::vector<Nic> nics;              // sorted by PCI address, then name
    std::vector<GpuLink> links;
    std::vector<std::string> warnings;  // things a source noticed but could live with

    const Gpu* gpu(int index) const;
    const NumaNode* numa(int os_index) const;
    const Nic* nic(const std::string& name) const;
    const GpuLink* link(int a, int b) const;  // either order; nullptr if none
    int numa_of_pu(int pu) const;     // OS index of the NUMA node holding PU `pu`, -1 none
    int package_of_pu(int pu) const;  // OS index of the package holding PU `pu`, -1 none

    // Called by every source once it is done: sorts GPUs by PCI address and
    // numbers them, sorts NICs and NUMA nodes, normalises links (a < b, one
    // per pair, GPU indices renumbered), and fills a GPU's or NIC's numa and
    // local_cpus from its PCI ancestors when the source left them unknown.
    // Sources may record links with gpu PCI order positions before sorting:
    // see topo/core/model.cpp for the exact contract.
    void finalize();
};

}  // namespace gputopo
