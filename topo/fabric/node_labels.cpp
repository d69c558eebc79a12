#include "topo/fabric/node_labels.hpp"

#include <cstdio>

namespace gputopo {

namespace {

bool k8s_value_ok(const std::string& v) {
    if (v.empty() || v.size() > 63) return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
    if (!alnum(v.front()) || !alnum(v.back())) return false;
    for (char c : v)
        if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
    return true;
}

}  // namespace

std::string label_value(const std::string& name) {
    if (k8s_value_ok(name)) return name;
    unsigned long long h = 14695981039346656037ULL;  // FNV-64a
    for (unsigned char c : name) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    char buf[20];
    std::snprintf(buf, sizeof buf, "x%016llx", h);
    return buf;
}

LabelKeys legacy_label_keys() {
    LabelKeys k;
    k.accelerator = "network.topology.nvidia.com/accelerator";
    k.sub_domain = "";
    k.leaf = k.island = "network.topology.nvidia.com/leaf";
    k.spine = "network.topology.nvidia.com/spine";
    k.core = "network.topology.nvidia.com/core";
    return k;
}

std::map<std::string, std::string> node_labels(const IslandMap& map, const std::map<std::string, std::string>& parents,
                                               const std::string& node, const std::string& clique, const LabelKeys& keys) {
    std::map<std::string, std::string> out;
    size_t id = map.find(node);
    if (id != IslandMap::npos) {
        const Island& is = map.island(id);
        switch (is.source) {
            case IslandSource::TopologyBlock: out[keys.accelerator] = label_value(is.name); break;
            case IslandSource::GputopoConf: out[keys.island] = label_value(is.name); break;
            case IslandSource::TopologyTree: {
                out[keys.leaf] = label_value(is.name);
                auto spine = parents.find(is.name);
                if (spine != parents.end()) {
                    out[keys.spine] = label_value(spine->second);
                    auto core = parents.find(spine->second);
                    if (core != parents.end()) out[keys.core] = label_value(core->second);
                }
                break;
            }
        }
    }
    if (!clique.empty() && !out.count(keys.accelerator)) {
        size_t colon = clique.rfind(':');
        std::string domain = clique.substr(0, colon), partition = clique;
        if (colon != std::string::npos) partition[colon] = '.';
        if (keys.sub_domain.empty()) {
            out[keys.accelerator] = label_value(partition);
        } else {
            out[keys.accelerator] = label_value(domain);
            out[keys.sub_domain] = label_value(partition);
        }
    }
    return out;
}

}  // namespace gputopo
