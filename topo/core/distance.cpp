#include "topo/core/distance.hpp"

#include <vector>

namespace gputopo {

const char* path_class_name(PathClass c) {
    switch (c) {
        case PathClass::Self: return "X";
        case PathClass::Link: return "NV";
        case PathClass::PIX: return "PIX";
        case PathClass::PXB: return "PXB";
        case PathClass::PHB: return "PHB";
        case PathClass::NODE: return "NODE";
        case PathClass::SYS: return "SYS";
    }
    return "SYS";
}

std::string Path::label() const {
    if (cls != PathClass::Link) return path_class_name(cls);
    switch (link_kind) {
        case LinkKind::NVLink: return "NV" + std::to_string(links);
        case LinkKind::XGMI: return "XGMI" + std::to_string(links);
        case LinkKind::C2C: return "C2C";
    }
    return "NV" + std::to_string(links);
}

int Path::rank() const {
    // Link classes first, more links before fewer; then PCIe classes.
    switch (cls) {
        case PathClass::Self: return 0;
        case PathClass::Link: return 1000 - (links > 999 ? 999 : links);
        case PathClass::PIX: return 2000;
        case PathClass::PXB: return 3000;
        case PathClass::PHB: return 4000;
        case PathClass::NODE: return 5000;
        case PathClass::SYS: return 6000;
    }
    return 6000;
}

namespace {

std::vector<int> ancestors_of(const Node& node, int obj) {
    std::vector<int> chain;  // obj, parent, ..., root
    for (int cur = obj; cur >= 0 && static_cast<size_t>(cur) < node.pci.size() && chain.size() < 64;
         cur = node.pci[static_cast<size_t>(cur)].parent)
        chain.push_back(cur);
    return chain;
}

Path numa_only(int numa_a, int numa_b) {
    Path p;
    p.cls = (numa_a >= 0 && numa_a == numa_b) ? PathClass::NODE : PathClass::SYS;
    return p;
}

// Bridges on the way from a chain's start (exclusive) up to the ancestor at
// position `lca_pos` (exclusive).
int bridges_below(const Node& node, const std::vector<int>& chain, size_t lca_pos) {
    int n = 0;
    for (size_t i = 1; i < lca_pos; ++i)
        if (node.pci[static_cast<size_t>(chain[i])].kind == PciKind::Bridge) ++n;
    return n;
}

}  // namespace

Path pci_path(const Node& node, int pci_a, int pci_b, int numa_a, int numa_b) {
    Path p;
    if (pci_a >= 0 && pci_a == pci_b) {
        p.cls = PathClass::Self;
        return p;
    }
    if (pci_a < 0 || pci_b < 0) return numa_only(numa_a, numa_b);
    auto ca = ancestors_of(node, pci_a), cb = ancestors_of(node, pci_b);
    for (size_t i = 0; i < ca.size(); ++i) {
        for (size_t j = 0; j < cb.size(); ++j) {
            if (ca[i] != cb[j]) continue;
            const PciObject& lca = node.pci[static_cast<size_t>(ca[i])];
            if (lca.kind == PciKind::HostBridge) {
                p.cls = PathClass::PHB;
                return p;
            }
            // The LCA is a bridge (a switch's upstream port or a root port).
            // The port directly below it on each side belongs to the same
            // switch; more bridges than that means several switches.
            int na = bridges_below(node, ca, i), nb = bridges_below(node, cb, j);
            p.cls = (na <= 1 && nb <= 1) ? PathClass::PIX : PathClass::PXB;
            return p;
        }
    }
    // Different PCI trees (host bridges).
    int ra = node.pci[static_cast<size_t>(ca.back())].numa, rb = node.pci[static_cast<size_t>(cb.back())].numa;
    if (numa_a < 0) numa_a = ra;
    if (numa_b < 0) numa_b = rb;
    return numa_only(numa_a, numa_b);
}

Path gpu_gpu_path(const Node& node, int gpu_a, int gpu_b) {
    Path p;
    if (gpu_a == gpu_b) {
        p.cls = PathClass::Self;
        return p;
    }
    if (const GpuLink* l = node.link(gpu_a, gpu_b)) {
        if (l->count > 0) {
            p.cls = PathClass::Link;
            p.links = l->count;
            p.link_kind = l->kind;
            return p;
        }
    }
    const Gpu* a = node.gpu(gpu_a);
    const Gpu* b = node.gpu(gpu_b);
    if (!a || !b) return p;
    return pci_path(node, a->pci_object, b->pci_object, a->numa, b->numa);
}

Path gpu_nic_path(const Node& node, int gpu, size_t nic) {
    const Gpu* g = node.gpu(gpu);
    if (!g || nic >= node.nics.size()) return Path{};
    const Nic& n = node.nics[nic];
    return pci_path(node, g->pci_object, n.pci_object, g->numa, n.numa);
}

Path nic_nic_path(const Node& node, size_t nic_a, size_t nic_b) {
    if (nic_a >= node.nics.size() || nic_b >= node.nics.size()) return Path{};
    if (nic_a == nic_b) {
        Path p;
        p.cls = PathClass::Self;
        return p;
    }
    const Nic& a = node.nics[nic_a];
    const Nic& b = node.nics[nic_b];
    return pci_path(node, a.pci_object, b.pci_object, a.numa, b.numa);
}

}  // namespace gputopo
