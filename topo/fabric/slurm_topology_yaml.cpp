// Slurm's topology.yaml (25.05+): the subset Slurm documents in topology.yaml(5)
// (tests/fixtures/topologies/slurm/slurm-man5-topology.yaml_EXAMPLE.yaml).
// A list of topologies, each "- topology: NAME" with "cluster_default: BOOL"
// and one plugin section: "tree:" (switches: "- switch: NAME" with "nodes:"
// or "children:"), "block:" (block_sizes, blocks: "- block: NAME" with
// "nodes:"), "flat:", "ring:", "torus3d:" (no islands). The cluster default
// topology (cluster_default: true, else the first) gives the islands: tree
// leaves (switches with nodes:) and blocks. No general YAML: one line at a
// time, "key: value" and "- key: value" only; anchors, flow style ({ } [ ])
// and multi-line scalars are refused with the line named.
#include <string>
#include <vector>

#include "topo/core/conf_lines.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"

namespace gputopo {

namespace {

constexpr size_t kMaxLines = 1000000;

struct YamlLine {
    int number = 0;
    size_t indent = 0;   // column of the key (after "- ")
    bool item = false;   // starts a list item
    std::string key;     // "" for a bare list value ("- 4")
    std::string value;   // scalar after "key:", "" when a block follows
};

std::string trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t\r");
    if (a == std::string::npos) return "";
    size_t b = s.find_last_not_of(" \t\r");
    return s.substr(a, b - a + 1);
}

std::string unquote(const std::string& s) {
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
        return s.substr(1, s.size() - 2);
    return s;
}

[[noreturn]] void fail(const std::string& file, int number, const std::string& text, const std::string& why) {
    throw ParseError(file + ":" + std::to_string(number) + ": '" + text + "': " + why +
                     " (expected the topology.yaml subset of topology.yaml(5): 'key: value' and '- key: value' lines)");
}

// One physical line, or nothing for blank/comment lines and the "---" marker.
bool parse_line(const std::string& raw, int number, const std::string& file, YamlLine& out) {
    std::string text = raw;
    size_t hash = text.find(" #");
    if (hash != std::string::npos) text.resize(hash);
    if (!text.empty() && text[0] == '#') return false;
    std::string t = trim(text);
    if (t.empty() || t == "---" || t == "...") return false;
    if (text.find('\t') != std::string::npos) fail(file, number, t, "a tab in the indentation");
    size_t col = text.find_first_not_of(' ');
    out = YamlLine{};
    out.number = number;
    std::string rest = text.substr(col);
    if (rest.rfind("- ", 0) == 0 || rest == "-") {
        out.item = true;
        size_t more = rest.find_first_not_of(' ', 1);
        if (more == std::string::npos) fail(file, number, t, "an empty list item");
        col += more;
        rest = rest.substr(more);
    }
    out.indent = col;
    auto refuse = [&](const std::string& s) {
        for (char c : {'{', '[', '&', '*', '|', '>', '!'})
            if (!s.empty() && s[0] == c) fail(file, number, t, std::string("YAML feature '") + c + "' not supported");
    };
    refuse(rest);
    size_t colon = rest.find(": ");
    if (colon == std::string::npos && !rest.empty() && rest.back() == ':') colon = rest.size() - 1;
    if (colon == std::string::npos) {
        if (!out.item) fail(file, number, t, "no 'key:'");
        out.value = unquote(trim(rest));
        return true;
    }
    out.key = trim(rest.substr(0, colon));
    refuse(trim(rest.substr(colon + 1)));
    out.value = unquote(trim(rest.substr(colon + 1)));
    if (out.key.empty()) fail(file, number, t, "an empty key");
    return true;
}

struct Entry {       // one "- switch:" / "- block:" item
    std::string kind;  // "switch" or "block"
    std::string name;
    std::string nodes;
    int number = 0;
    std::string text;
};

struct Topology {
    std::string name;
    bool is_default = false;
    std::string plugin;  // "tree", "block", "flat", "ring", "torus3d", ...
    std::vector<Entry> entries;
};

}  // namespace

void parse_slurm_topology_yaml(std::string_view text, const std::string& file, IslandMap& map) {
    std::vector<Topology> topos;
    Entry* entry = nullptr;
    size_t entry_indent = 0;
    size_t start = 0;
    int number = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        std::string raw(text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
        start = nl == std::string_view::npos ? text.size() : nl + 1;
        if (static_cast<size_t>(++number) > kMaxLines)
            throw ParseError(file + ": more than " + std::to_string(kMaxLines) + " lines (expected a topology.yaml)");
        YamlLine l;
        if (!parse_line(raw, number, file, l)) continue;
        if (entry && l.indent <= entry_indent && !(l.indent == entry_indent && !l.item)) entry = nullptr;
        if (l.item && l.key == "topology") {
            topos.push_back(Topology{l.value, false, "", {}});
            entry = nullptr;
            continue;
        }
        if (topos.empty()) fail(file, number, trim(raw), "a key before the first '- topology: NAME'");
        Topology& t = topos.back();
        if (l.key == "cluster_default") {
            t.is_default = l.value == "true" || l.value == "True" || l.value == "yes";
        } else if (!entry && t.plugin.empty() && !l.item &&
                   (l.key == "tree" || l.key == "block" || l.key == "flat" || l.key == "ring" ||
                    l.key == "torus3d")) {
            t.plugin = l.key;
        } else if (l.item && (l.key == "switch" || l.key == "block")) {
            if (!valid_island_name(l.value))
                fail(file, number, trim(raw), "bad " + l.key + " name '" + l.value + "'");
            t.entries.push_back(Entry{l.key, l.value, "", number, trim(raw)});
            entry = &t.entries.back();
            entry_indent = l.indent;
        } else if (entry && l.key == "nodes") {
            entry->nodes = l.value;
        }
        // Anything else (children:, block_sizes:, rings, toruses, dims ...) does not make islands.
    }
    const Topology* chosen = nullptr;
    for (const Topology& t : topos)
        if (t.is_default && !chosen) chosen = &t;
    if (!chosen && !topos.empty()) chosen = &topos.front();
    if (!chosen || (chosen->plugin != "tree" && chosen->plugin != "block")) return;
    for (const Entry& e : chosen->entries) {
        if (e.nodes.empty()) continue;  // an upper switch
        Hostlist nodes;
        try {
            nodes = Hostlist::parse(e.nodes);
        } catch (const ParseError& err) {
            fail(file, e.number, e.text, std::string("nodes: ") + err.what());
        }
        map.add(e.name, nodes, e.kind == "block" ? IslandSource::TopologyBlock : IslandSource::TopologyTree,
                file + ":" + std::to_string(e.number));
    }
}

void read_slurm_topology_yaml(const std::string& path, IslandMap& map) {
    parse_slurm_topology_yaml(read_text_file(path, "Slurm topology.yaml"), path, map);
}

}  // namespace gputopo
