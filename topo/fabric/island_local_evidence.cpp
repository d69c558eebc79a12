// Task-local island evidence: SLURM_TOPOLOGY_ADDR and NVML fabric cliques.
#include <string>
#include <vector>

#include "topo/fabric/island_sources.hpp"

namespace gputopo {

namespace {

std::vector<std::string_view> split_dots(std::string_view s) {
    std::vector<std::string_view> out;
    size_t pos = 0;
    while (true) {
        size_t dot = s.find('.', pos);
        out.push_back(s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos));
        if (dot == std::string_view::npos) break;
        pos = dot + 1;
    }
    return out;
}

}  // namespace

std::string leaf_from_topology_addr(std::string_view addr, std::string_view pattern) {
    if (addr.empty()) return "";
    std::vector<std::string_view> parts = split_dots(addr);
    if (!pattern.empty()) {
        std::vector<std::string_view> kinds = split_dots(pattern);
        if (kinds.size() == parts.size()) {
            for (size_t i = parts.size(); i-- > 0;)
                if (kinds[i] == "switch" && !parts[i].empty()) return std::string(parts[i]);
            return "";
        }
    }
    // Without a usable pattern: the component before the node name.
    if (parts.size() < 2) return "";
    return std::string(parts[parts.size() - 2]);
}

std::string nvml_clique_of(const Node& node, std::string* why) {
    std::string found;
    for (const Gpu& g : node.gpus) {
        if (g.fabric_cluster_uuid.empty() || g.fabric_clique < 0) continue;
        std::string id = g.fabric_cluster_uuid + ":" + std::to_string(g.fabric_clique);
        if (found.empty()) {
            found = id;
        } else if (found != id) {
            if (why) *why = "GPUs of this node report different NVLink cliques (" + found + ", " + id + ")";
            return "";
        }
    }
    return found;
}

}  // namespace gputopo
