#include "topo/output/picture_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace gputopo {

namespace {

// Orders leaves by PCI address, GPUs before NICs on the same function.
using OrderKey = std::tuple<PciAddress, int, int>;

struct Built {
    DeviceTreeNode node;
    OrderKey key;
};

struct Index {
    std::map<int, std::vector<int>> bridges;      // pci index -> child pci indices that lead to devices
    std::map<int, std::vector<Built>> leaves;     // pci index -> devices directly under it
};

bool valid_pci(const Node& node, int i) { return i >= 0 && static_cast<size_t>(i) < node.pci.size(); }

// The root of `pci_object`'s chain, recording each step in `index`. A broken
// chain (index out of range, a loop) ends where it breaks.
int record_chain(const Node& node, int pci_object, Index& index) {
    int child = pci_object;
    int parent = node.pci[static_cast<size_t>(pci_object)].parent;
    for (size_t steps = 0; valid_pci(node, parent) && steps < node.pci.size(); ++steps) {
        auto& kids = index.bridges[parent];
        if (child != pci_object && std::find(kids.begin(), kids.end(), child) == kids.end()) kids.push_back(child);
        child = parent;
        parent = node.pci[static_cast<size_t>(parent)].parent;
    }
    return child;
}

Built build(const Node& node, int pci, const Index& index, int depth) {
    std::vector<Built> children;
    auto b = index.bridges.find(pci);
    if (b != index.bridges.end() && depth < static_cast<int>(node.pci.size()))
        for (int c : b->second) children.push_back(build(node, c, index, depth + 1));
    auto l = index.leaves.find(pci);
    if (l != index.leaves.end()) children.insert(children.end(), l->second.begin(), l->second.end());
    std::sort(children.begin(), children.end(), [](const Built& x, const Built& y) { return x.key < y.key; });
    if (children.size() == 1) return children.front();
    Built out;
    out.node.kind = node.pci[static_cast<size_t>(pci)].kind == PciKind::HostBridge ? DeviceTreeNode::HostBridge
                                                                                    : DeviceTreeNode::Switch;
    out.node.index = pci;
    out.key = children.empty() ? OrderKey{} : children.front().key;
    for (auto& c : children) out.node.children.push_back(std::move(c.node));
    return out;
}

}  // namespace

std::vector<NumaDevices> device_forest(const Node& node) {
    Index index;
    std::map<int, std::vector<Built>> loose;  // numa -> devices without a PCI parent
    std::map<int, int> root_numa;             // root pci index -> numa of its first device
    auto add = [&](DeviceTreeNode::Kind kind, int i, const PciAddress& pci, int pci_object, int numa) {
        Built leaf;
        leaf.node.kind = kind;
        leaf.node.index = i;
        leaf.key = OrderKey{pci, kind == DeviceTreeNode::GpuLeaf ? 0 : 1, i};
        if (!valid_pci(node, pci_object) || !valid_pci(node, node.pci[static_cast<size_t>(pci_object)].parent)) {
            loose[numa].push_back(leaf);
            return;
        }
        int root = record_chain(node, pci_object, index);
        index.leaves[node.pci[static_cast<size_t>(pci_object)].parent].push_back(leaf);
        if (!root_numa.count(root)) {
            int root_numa_index = node.pci[static_cast<size_t>(root)].numa;
            root_numa[root] = root_numa_index >= 0 ? root_numa_index : numa;
        }
    };
    for (const auto& g : node.gpus) add(DeviceTreeNode::GpuLeaf, g.index, g.pci, g.pci_object, g.numa);
    for (size_t n = 0; n < node.nics.size(); ++n) {
        const Nic& nic = node.nics[n];
        add(DeviceTreeNode::NicLeaf, static_cast<int>(n), nic.pci, nic.pci_object, nic.numa);
    }

    std::map<int, std::vector<Built>> by_numa = loose;
    for (const auto& kv : root_numa) by_numa[kv.second].push_back(build(node, kv.first, index, 0));

    std::vector<int> order;
    for (const auto& n : node.numa_nodes) order.push_back(n.os_index);
    for (const auto& kv : by_numa)
        if (std::find(order.begin(), order.end(), kv.first) == order.end()) order.push_back(kv.first);
    std::stable_partition(order.begin(), order.end(), [](int n) { return n >= 0; });

    std::vector<NumaDevices> out;
    for (int numa : order) {
        auto it = by_numa.find(numa);
        if (it == by_numa.end()) continue;
        auto roots = it->second;
        std::sort(roots.begin(), roots.end(), [](const Built& x, const Built& y) { return x.key < y.key; });
        NumaDevices group;
        group.numa = numa;
        for (auto& r : roots) group.roots.push_back(std::move(r.node));
        out.push_back(std::move(group));
    }
    return out;
}

int leaf_count(const DeviceTreeNode& t) {
    if (t.children.empty()) return t.kind == DeviceTreeNode::GpuLeaf || t.kind == DeviceTreeNode::NicLeaf ? 1 : 0;
    int n = 0;
    for (const auto& c : t.children) n += leaf_count(c);
    return n;
}

int switch_depth(const DeviceTreeNode& t) {
    int d = 0;
    for (const auto& c : t.children) d = std::max(d, switch_depth(c) + 1);
    return d;
}

std::string tree_node_label(const Node& node, const DeviceTreeNode& t) {
    if (t.kind == DeviceTreeNode::HostBridge) return "host bridge";
    if (t.kind != DeviceTreeNode::Switch) return "";
    const PciObject& p = node.pci[static_cast<size_t>(t.index)];
    return p.has_address ? "PCIe switch " + p.address.to_string() : std::string("PCIe switch");
}

int package_of(const Node& node, const CpuSet& cpus) {
    for (size_t p = 0; p < node.packages.size(); ++p)
        if (node.packages[p].cpus.intersects(cpus)) return static_cast<int>(p);
    return -1;
}

std::string nic_unusable_reason(const Nic& nic) {
    if (nic.usable()) return "";
    if (!nic.rdma) return "no RDMA device";
    if (nic.storage) return "storage";
    return "no active port";
}

std::string short_gpu_model(const std::string& model) {
    for (const char* prefix : {"NVIDIA ", "AMD ", "Tesla "})
        if (model.rfind(prefix, 0) == 0) return short_gpu_model(model.substr(std::string(prefix).size()));
    return model;
}

}  // namespace gputopo

namespace gputopo {

std::map<int, std::vector<int>> island_members(const std::vector<int>& islands) {
    std::map<int, std::vector<int>> members;
    for (size_t g = 0; g < islands.size(); ++g)
        if (islands[g] >= 0) members[islands[g]].push_back(static_cast<int>(g));
    return members;
}

std::string island_kind(const Node& node, const std::vector<int>& gpus) {
    for (size_t i = 0; i < gpus.size(); ++i)
        for (size_t j = i + 1; j < gpus.size(); ++j)
            if (const GpuLink* l = node.link(gpus[i], gpus[j])) {
                switch (l->kind) {
                    case LinkKind::NVLink: return "NVLink";
                    case LinkKind::XGMI: return "xGMI";
                    case LinkKind::C2C: return "C2C";
                }
            }
    return gpus.size() > 1 ? "PCIe" : "single GPU";
}

}  // namespace gputopo

namespace gputopo {

PlanOwners plan_owners(const Plan& plan) {
    PlanOwners o;
    for (const auto& t : plan.tasks) {
        for (int g : t.gpus) o.gpu_tasks[g].push_back(t.task);
        for (const auto& n : t.nics) o.nic_tasks[n].push_back(t.task);
        for (int pu : t.cpus.to_vector()) o.pu_task.emplace(pu, t.task);
    }
    return o;
}

std::string task_color(int task) {
    // Tableau 20, strong colours first.
    static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                          "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                                          "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};
    const int n = static_cast<int>(sizeof kColors / sizeof kColors[0]);
    return kColors[((task % n) + n) % n];
}

namespace {

double relative_luminance(const std::string& color) {
    unsigned rgb[3] = {0, 0, 0};
    if (std::sscanf(color.c_str(), "#%2x%2x%2x", &rgb[0], &rgb[1], &rgb[2]) != 3) return 0;
    double l[3];
    for (int i = 0; i < 3; ++i) {
        const double c = rgb[i] / 255.0;
        l[i] = c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
    }
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
}

}  // namespace

double contrast_ratio(const std::string& a, const std::string& b) {
    const double la = relative_luminance(a), lb = relative_luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

std::string ink_on(const std::string& background) {
    return contrast_ratio(background, "#ffffff") >= contrast_ratio(background, "#000000") ? "#ffffff" : "#000000";
}

}  // namespace gputopo
