// Slurm's topology.conf: leaf switches (topology/tree) and blocks
// (topology/block) become islands.
#include <map>
#include <string>

#include "topo/core/conf_lines.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"

namespace gputopo {

namespace {

const char* kExpected =
    "'SwitchName=NAME Nodes=HOSTLIST', 'SwitchName=NAME Switches=HOSTLIST', 'BlockName=NAME Nodes=HOSTLIST', "
    "'BlockSizes=...' or 'RingName=NAME Nodes=...'";

Hostlist hostlist_of(const ConfLine& line, const std::string& value, const char* key) {
    try {
        return Hostlist::parse(value);
    } catch (const ParseError& e) {
        line.fail(std::string(key) + "=: " + e.what(), "a Slurm hostlist such as 'n[1-18]'");
    }
}

}  // namespace

void parse_slurm_topology(std::string_view text, const std::string& file, IslandMap& map) {
    for (const ConfLine& line : parse_conf_lines(text, file)) {
        const std::string& key = line.pairs.front().first;
        const std::string& name = line.pairs.front().second;
        bool tree = iequals(key, "SwitchName");
        bool block = iequals(key, "BlockName");
        if (iequals(key, "BlockSizes") || iequals(key, "RingName")) continue;
        if (!tree && !block) line.fail("unknown key '" + key + "'", kExpected);
        if (!valid_island_name(name))
            line.fail("bad " + key + " '" + name + "'", "1-128 characters from A-Z a-z 0-9 . _ : + @ -");
        const std::string* nodes = nullptr;
        for (size_t i = 1; i < line.pairs.size(); ++i) {
            const std::string& k = line.pairs[i].first;
            if (iequals(k, "Nodes")) {
                nodes = &line.pairs[i].second;
            } else if (tree && iequals(k, "Switches")) {
                hostlist_of(line, line.pairs[i].second, "Switches");  // checked, not needed
            } else if (tree && iequals(k, "LinkSpeed")) {
                continue;
            } else {
                line.fail("unknown key '" + k + "'",
                          tree ? "Nodes=, Switches= or LinkSpeed= after SwitchName=" : "Nodes= after BlockName=");
            }
        }
        if (block && !nodes) line.fail("no Nodes=", "BlockName=NAME Nodes=HOSTLIST");
        if (!nodes) continue;  // an upper switch
        map.add(name, hostlist_of(line, *nodes, "Nodes"),
                block ? IslandSource::TopologyBlock : IslandSource::TopologyTree, line.origin());
    }
}

std::map<std::string, std::string> parse_switch_parents(std::string_view text, const std::string& file) {
    std::map<std::string, std::string> parent;
    for (const ConfLine& line : parse_conf_lines(text, file)) {
        if (!iequals(line.pairs.front().first, "SwitchName")) continue;
        const std::string* below = line.get("Switches");
        if (!below) continue;
        Hostlist children = hostlist_of(line, *below, "Switches");
        for (uint64_t i = 0; i < children.count() && i < 100000; ++i) parent.emplace(children.nth(i), line.pairs.front().second);
    }
    return parent;
}

void read_slurm_topology(const std::string& path, IslandMap& map) {
    parse_slurm_topology(read_text_file(path, "Slurm topology.conf"), path, map);
}

}  // namespace gputopo
