#include "topo/core/model.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace gputopo {

const char* vendor_name(Vendor v) {
    switch (v) {
        case Vendor::Nvidia: return "nvidia";
        case Vendor::Amd: return "amd";
        case Vendor::Intel: return "intel";
        case Vendor::Other: break;
    }
    return "other";
}

Vendor vendor_from_pci_id(unsigned vendor_id) {
    switch (vendor_id) {
        case 0x10de: return Vendor::Nvidia;
        case 0x1002: return Vendor::Amd;
        case 0x8086: return Vendor::Intel;
        default: return Vendor::Other;
    }
}

const char* link_kind_name(LinkKind k) {
    switch (k) {
        case LinkKind::NVLink: return "nvlink";
        case LinkKind::XGMI: return "xgmi";
        case LinkKind::C2C: return "c2c";
    }
    return "nvlink";
}

bool Nic::usable() const {
    if (!rdma || storage) return false;
    if (ports.empty()) return true;
    for (const auto& p : ports)
        if (p.state.empty() || p.state == "ACTIVE") return true;
    return false;
}

const Gpu* Node::gpu(int index) const {
    if (index < 0 || static_cast<size_t>(index) >= gpus.size()) return nullptr;
    return &gpus[static_cast<size_t>(index)];
}

const NumaNode* Node::numa(int os_index) const {
    for (const auto& n : numa_nodes)
        if (n.os_index == os_index) return &n;
    return nullptr;
}

const Nic* Node::nic(const std::string& name) const {
    for (const auto& n : nics)
        if (n.name == name) return &n;
    return nullptr;
}

int Node::numa_of_pu(int pu) const {
    for (const auto& n : numa_nodes)
        if (n.cpus.test(pu)) return n.os_index;
    return -1;
}

int Node::package_of_pu(int pu) const {
    for (const auto& p : packages)
        if (p.cpus.test(pu)) return p.os_index;
    return -1;
}

const GpuLink* Node::link(int a, int b) const {
    if (a > b) std::swap(a, b);
    for (const auto& l : links)
        if (l.a == a && l.b == b) return &l;
    return nullptr;
}

namespace {

// Walk up the PCI tree from object `i` to the first ancestor (or itself)
// with a known NUMA node / cpuset.
void inherit_locality(const std::vector<PciObject>& pci, int i, int& numa, CpuSet& cpus) {
    for (int cur = i; cur >= 0 && static_cast<size_t>(cur) < pci.size(); cur = pci[static_cast<size_t>(cur)].parent) {
        const auto& o = pci[static_cast<size_t>(cur)];
        if (numa < 0 && o.numa >= 0) numa = o.numa;
        if (cpus.empty() && !o.local_cpus.empty()) cpus = o.local_cpus;
        if (numa >= 0 && !cpus.empty()) return;
    }
}

}  // namespace

void Node::finalize() {
    std::sort(numa_nodes.begin(), numa_nodes.end(),
              [](const NumaNode& x, const NumaNode& y) { return x.os_index < y.os_index; });
    std::sort(packages.begin(), packages.end(),
              [](const Package& x, const Package& y) { return x.os_index < y.os_index; });
    if (cpus.empty()) {
        for (const auto& n : numa_nodes) cpus |= n.cpus;
        for (const auto& p : packages) cpus |= p.cpus;
    }

    // GPUs in PCI order; remember where each old position went.
    std::vector<size_t> order(gpus.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return gpus[x].pci < gpus[y].pci; });
    std::vector<int> new_index(gpus.size());
    std::vector<Gpu> sorted;
    sorted.reserve(gpus.size());
    for (size_t k = 0; k < order.size(); ++k) {
        new_index[order[k]] = static_cast<int>(k);
        sorted.push_back(gpus[order[k]]);
        sorted.back().index = static_cast<int>(k);
    }
    gpus = std::move(sorted);

    // Links: renumber, orient a < b, merge duplicates (keep the larger count).
    std::map<std::pair<int, int>, GpuLink> merged;
    for (auto l : links) {
        if (l.a < 0 || l.b < 0 || static_cast<size_t>(l.a) >= new_index.size() ||
            static_cast<size_t>(l.b) >= new_index.size())
            continue;
        l.a = new_index[static_cast<size_t>(l.a)];
        l.b = new_index[static_cast<size_t>(l.b)];
        if (l.a == l.b) continue;
        if (l.a > l.b) std::swap(l.a, l.b);
        auto key = std::make_pair(l.a, l.b);
        auto it = merged.find(key);
        if (it == merged.end()) {
            merged.emplace(key, l);
        } else {
            it->second.count = std::max(it->second.count, l.count);
            it->second.bandwidth_gbps = std::max(it->second.bandwidth_gbps, l.bandwidth_gbps);
            it->second.via_switch = it->second.via_switch || l.via_switch;
        }
    }
    links.clear();
    for (auto& kv : merged) links.push_back(kv.second);

    std::stable_sort(nics.begin(), nics.end(), [](const Nic& x, const Nic& y) {
        if (x.pci != y.pci) return x.pci < y.pci;
        return x.name < y.name;
    });

    for (auto& g : gpus) inherit_locality(pci, g.pci_object, g.numa, g.local_cpus);
    for (auto& n : nics) inherit_locality(pci, n.pci_object, n.numa, n.local_cpus);
    // A known NUMA node but no cpuset: use the NUMA node's CPUs.
    for (auto& g : gpus)
        if (g.local_cpus.empty() && g.numa >= 0)
            if (const NumaNode* nn = numa(g.numa)) g.local_cpus = nn->cpus;
    for (auto& n : nics)
        if (n.local_cpus.empty() && n.numa >= 0)
            if (const NumaNode* nn = numa(n.numa)) n.local_cpus = nn->cpus;
}

}  // namespace gputopo
