#include "topo/core/strings.hpp"
#include "topo/output/dot_writer.hpp"

#include <map>

#include "topo/output/picture_model.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/output/text_table.hpp"

namespace gputopo {

namespace {

// A DOT string literal: quotes and backslashes escaped, "\n" kept as DOT's line break.
std::string q(const std::string& s) {
    std::string o = "\"";
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '\n') o += "\\n";
        else if (c == '"' || c == '\\') (o += '\\') += c;
        else if (static_cast<unsigned char>(c) >= 0x20) o += c;
    }
    return o + "\"";
}

std::string numa_id(int numa) { return numa >= 0 ? "numa" + std::to_string(numa) : std::string("numa_unknown"); }

struct DotGraph {
    const Node& node;
    const Plan* plan;
    PlanOwners owners;
    std::string out;
};

std::vector<int> tasks_of_gpu(const DotGraph& g, int gpu) {
    auto it = g.owners.gpu_tasks.find(gpu);
    return it == g.owners.gpu_tasks.end() ? std::vector<int>{} : it->second;
}

std::string task_words(const std::vector<int>& tasks) {
    std::vector<std::string> words;
    for (int t : tasks) words.push_back(std::to_string(t));
    return (tasks.size() == 1 ? "task " : "tasks ") + join_strings(words, ",");
}

void write_leaf(DotGraph& g, const DeviceTreeNode& t, const std::string& indent) {
    if (t.kind == DeviceTreeNode::GpuLeaf) {
        const Gpu& gpu = g.node.gpus[static_cast<size_t>(t.index)];
        std::string label = "GPU" + std::to_string(gpu.index);
        if (!gpu.model.empty()) label += "\n" + short_gpu_model(gpu.model);
        label += "\n" + gpu.pci.to_string();
        const auto tasks = g.plan ? tasks_of_gpu(g, gpu.index) : std::vector<int>{};
        std::string fill = "#f1f8e9", pen = "1.5";
        if (!tasks.empty()) {
            label += "\n" + task_words(tasks);
            fill = task_color(tasks.front());
            pen = "3";
        }
        g.out += indent + "gpu" + std::to_string(gpu.index) + " [label=" + q(label) + ", fillcolor=" + q(fill) +
                 ", fontcolor=" + q(ink_on(fill)) + ", color=\"#558b2f\", penwidth=" + pen + "];\n";
        return;
    }
    const Nic& nic = g.node.nics[static_cast<size_t>(t.index)];
    const std::string why = nic_unusable_reason(nic);
    std::string label = nic.name + "\n" + nic.pci.to_string() + "\n" + (why.empty() ? std::string("usable") : why);
    std::string fill = why.empty() ? "#e3f2fd" : "#f5f5f5";
    std::string style = why.empty() ? "rounded,filled" : "rounded,filled,dashed";
    if (g.plan) {
        auto it = g.owners.nic_tasks.find(nic.name);
        if (it != g.owners.nic_tasks.end()) {
            label += "\n" + task_words(it->second);
            fill = task_color(it->second.front());
        }
    }
    g.out += indent + "nic" + std::to_string(t.index) + " [label=" + q(label) + ", fillcolor=" + q(fill) +
             ", fontcolor=" + q(ink_on(fill)) + ", style=" + q(style) + ", color=" + q(why.empty() ? "#1565c0" : "#9e9e9e") + "];\n";
}

std::string tree_id(const DeviceTreeNode& t) {
    switch (t.kind) {
        case DeviceTreeNode::GpuLeaf: return "gpu" + std::to_string(t.index);
        case DeviceTreeNode::NicLeaf: return "nic" + std::to_string(t.index);
        default: return "pci" + std::to_string(t.index);
    }
}

// Nodes of the subtree (inside the NUMA cluster) and its edges (collected).
void write_tree(DotGraph& g, const DeviceTreeNode& t, const std::string& parent, const std::string& indent,
                std::string& edges) {
    edges += "  " + parent + " -- " + tree_id(t) + ";\n";
    if (t.children.empty()) {
        write_leaf(g, t, indent);
        return;
    }
    g.out += indent + tree_id(t) + " [label=" + q(tree_node_label(g.node, t)) +
             ", shape=box, style=\"rounded\", fontsize=9, color=\"#78909c\"];\n";
    for (const auto& c : t.children) write_tree(g, c, tree_id(t), indent, edges);
}

std::string numa_label(const DotGraph& g, int numa, const CpuSet& cpus) {
    std::string label = numa >= 0 ? "NUMA " + std::to_string(numa) : std::string("NUMA unknown");
    if (!cpus.empty()) label += "\nCPUs " + cpus.to_list();
    if (g.plan)
        for (const auto& t : g.plan->tasks) {
            const CpuSet mine = t.cpus & cpus;
            if (!mine.empty()) label += "\ntask " + std::to_string(t.task) + ": " + mine.to_list();
        }
    return label;
}

void write_numa(DotGraph& g, int numa, const CpuSet& cpus, const NumaDevices* devices, const std::string& indent,
                std::string& edges) {
    const std::string id = numa_id(numa);
    g.out += indent + "subgraph cluster_" + id + " {\n";
    g.out += indent + "  label=" + q(numa >= 0 ? "NUMA " + std::to_string(numa) : std::string("NUMA unknown")) +
             "; style=\"rounded,filled\"; fillcolor=\"#eceff1\"; color=\"#b0bec5\";\n";
    g.out += indent + "  " + id + " [label=" + q(numa_label(g, numa, cpus)) +
             ", shape=box, style=\"filled\", fillcolor=\"#cfd8dc\", color=\"#90a4ae\"];\n";
    if (devices)
        for (const auto& r : devices->roots) write_tree(g, r, id, indent + "  ", edges);
    g.out += indent + "}\n";
}

void write_links(DotGraph& g, const std::vector<int>& islands) {
    std::map<int, bool> fabric_drawn;  // island -> NVSwitch node written
    for (const auto& l : g.node.links) {
        const std::string color = l.kind == LinkKind::XGMI ? "#a31515" : l.kind == LinkKind::C2C ? "#6a1b9a" : "#4e7d0e";
        const std::string label = (l.kind == LinkKind::NVLink ? "NV" : l.kind == LinkKind::XGMI ? "XGMI" : "C2C") +
                                  (l.kind == LinkKind::C2C ? std::string() : std::to_string(l.count));
        const int island = static_cast<size_t>(l.a) < islands.size() ? islands[static_cast<size_t>(l.a)] : -1;
        if (l.via_switch && island >= 0) {
            const std::string fabric = "fabric" + std::to_string(island);
            if (!fabric_drawn[island]) {
                g.out += "  " + fabric + " [label=" + q("NVSwitch fabric\nisland " + std::to_string(island) + ", " +
                                                        label) +
                         ", shape=hexagon, style=filled, fillcolor=\"#dcedc8\", color=" + q(color) + "];\n";
                for (const auto& kv : island_members(islands))
                    if (kv.first == island)
                        for (int gpu : kv.second)
                            g.out += "  gpu" + std::to_string(gpu) + " -- " + fabric + " [color=" + q(color) +
                                     ", penwidth=2];\n";
                fabric_drawn[island] = true;
            }
            continue;
        }
        g.out += "  gpu" + std::to_string(l.a) + " -- gpu" + std::to_string(l.b) + " [label=" + q(label) +
                 ", color=" + q(color) + ", fontcolor=" + q(color) + ", penwidth=2];\n";
    }
}

}  // namespace

std::string topology_dot(const Node& node, const std::vector<int>& islands, const Plan* plan) {
    DotGraph g{node, plan, plan ? plan_owners(*plan) : PlanOwners{}, ""};
    const std::vector<NumaDevices> forest = device_forest(node);
    std::map<int, const NumaDevices*> devices;
    for (const auto& d : forest) devices[d.numa] = &d;

    std::string title = (node.hostname.empty() ? std::string("gputopo") : node.hostname) + ": " +
                        std::to_string(node.gpus.size()) + " GPUs, " + std::to_string(node.nics.size()) + " NICs";
    if (plan) title += "; plan: mode " + std::string(mode_name(plan->mode)) + ", " + std::to_string(plan->tasks.size()) +
                       " tasks";
    g.out = "graph gputopo {\n";
    g.out += "  graph [label=" + q(title) + ", labelloc=t, fontname=\"Helvetica\", fontsize=14, newrank=true, rankdir=LR, ordering=out];\n";
    g.out += "  node [fontname=\"Helvetica\", fontsize=10, shape=box, style=\"rounded,filled\"];\n";
    g.out += "  edge [color=\"#90a4ae\", fontname=\"Helvetica\", fontsize=10];\n";

    std::string edges;
    std::vector<int> drawn;
    std::map<int, std::vector<const NumaNode*>> by_package;  // package position (-1 none) -> NUMA nodes
    for (const auto& n : node.numa_nodes)
        if (!n.cpus.empty()) by_package[package_of(node, n.cpus)].push_back(&n);
    for (const auto& kv : by_package) {
        std::string indent = "  ";
        if (kv.first >= 0) {
            g.out += "  subgraph cluster_package" + std::to_string(kv.first) + " {\n";
            g.out += "    label=" + q("Package " + std::to_string(node.packages[static_cast<size_t>(kv.first)].os_index)) +
                     "; style=rounded; color=\"#90a4ae\";\n";
            indent = "    ";
        }
        for (const NumaNode* n : kv.second) {
            auto d = devices.find(n->os_index);
            write_numa(g, n->os_index, n->cpus, d == devices.end() ? nullptr : d->second, indent, edges);
            drawn.push_back(n->os_index);
        }
        if (kv.first >= 0) g.out += "  }\n";
    }
    for (const auto& d : forest) {
        bool done = false;
        for (int n : drawn) done |= n == d.numa;
        if (!done) write_numa(g, d.numa, drawn.empty() ? node.cpus : CpuSet(), &d, "  ", edges);
    }
    // Left to right (the tree's depth across, its leaves down: readable at 900 px where top
    // to bottom was 2347 x 500). With ordering=out Graphviz stacks a rank's nodes bottom up
    // in edge order: the edges go last first, so that GPU0 and the first NIC are on top.
    std::vector<std::string> lines = split_nonempty(edges, '\n');
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) g.out += *it + "\n";
    write_links(g, islands);
    g.out += "}\n";
    return g.out;
}

}  // namespace gputopo
