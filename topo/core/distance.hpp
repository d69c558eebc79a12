// Distance classes between PCI devices, in the vocabulary people already read
// in `nvidia-smi topo -m`. This is the one definition the planner, the CLI, the
// plugin and the tests use.
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

// Ordered best (closest) to worst.
enum class PathClass {
    Self,   // X
    Link,   // NV# / XGMI / C2C: a direct or switched GPU link
    PIX,    // at most a single PCIe bridge (one switch)
    PXB,    // several PCIe bridges, no host bridge
    PHB,    // through a PCIe host bridge
    NODE,   // between host bridges within one NUMA node
    SYS,    // across the SMP interconnect between NUMA nodes
};

struct Path {
    PathClass cls = PathClass::SYS;
    int links = 0;                      // for Link: bonded link count
    LinkKind link_kind = LinkKind::NVLink;
    std::string label() const;          // "X", "NV18", "XGMI2", "PIX", "PXB", "PHB", "NODE", "SYS"
    // Smaller is closer. Links rank by count (more links = closer).
    int rank() const;
    bool operator<(const Path& o) const { return rank() < o.rank(); }
};

const char* path_class_name(PathClass c);

// PCI path between two PCI objects of node.pci (indices). numa_a/numa_b are
// used when the objects are in different PCI trees or unknown (-1).
Path pci_path(const Node& node, int pci_a, int pci_b, int numa_a, int numa_b);

Path gpu_gpu_path(const Node& node, int gpu_a, int gpu_b);   // GPU indices
Path gpu_nic_path(const Node& node, int gpu, size_t nic);     // GPU index, index into node.nics
Path nic_nic_path(const Node& node, size_t nic_a, size_t nic_b);

}  // namespace gputopo
