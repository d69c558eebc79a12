// Slurm's topology.yaml (25.05+): the subset Slurm documents in topology.yaml(5)
// (tests/fixtures/topologies/slurm/slurm-man5-topology.yaml_EXAMPLE.yaml).
// A list of topologies, each "- topology: NAME" with "cluster_default: BOOL"
// and one plugin section: "tree:" (switches: "- switch: NAME" with "nodes:"
// or "children:"), "block:" (block_sizes, blocks: "- block: NAME" with
// "nodes:"), "flat:", "ring:", "torus3d:" (no islands). The cluster default
// topology (cluster_default: true, else the first) gives the islands: tree
// leaves (switches with nodes:) and blocks. Block style one line at a time
// ("key: value", "- key: value"), and flow style as YAML writes it
// ("block_sizes: [4, 16]", "- {block: b1, nodes: \"n[1-4]\"}", nested, over
// several lines until its brackets close), which is turned into the same block
// lines first. Anchors, aliases, tags and multi-line scalars are refused with
// the line named.
#include <algorithm>
#include <string>
#include <vector>

#include "topo/core/conf_lines.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"

namespace gputopo {

namespace {

constexpr size_t kMaxLines = 1000000;
// One flow collection ("blocks: [...]" over many lines) is at most this long and
// this deep: an unclosed '[' stops here instead of taking the rest of the file.
constexpr size_t kMaxFlowBytes = size_t{4} << 20;
constexpr int kMaxFlowDepth = 32;

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

std::string strip_comment(const std::string& raw) {
    std::string text = raw;
    size_t hash = text.find(" #");
    if (hash != std::string::npos) text.resize(hash);
    if (!text.empty() && text[0] == '#') return "";
    return text;
}

// One physical line, or nothing for blank/comment lines and the "---" marker.
bool parse_line(const std::string& raw, int number, const std::string& file, YamlLine& out) {
    const std::string text = strip_comment(raw);
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

// Flow style ("[a, b]", "{k: v}") to the block lines it stands for. A plain scalar ends at
// , [ ] { } (YAML's flow indicators: "[n[1-2]]" is not YAML, '["n[1-2]"]' is); quoted
// scalars keep their quotes for parse_line.
class FlowToBlock {
public:
    FlowToBlock(std::string text, const std::string& file, int number) : s_(std::move(text)), file_(file), number_(number) {}

    // `head` is what precedes the flow value on its line ("key:", "- key:", "-", "- key: ..."
    // without the value), at column `col`: the block lines, indented as YAML reads them.
    std::vector<std::string> lines(const std::string& head, size_t col) {
        std::vector<std::string> out;
        node(head, col, out);
        skip();
        if (pos_ != s_.size()) bad("text after the flow collection");
        return out;
    }

private:
    void skip() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
    }
    [[noreturn]] void bad(const std::string& why) const {
        const std::string shown = trim(s_.substr(0, 200)) + (s_.size() > 200 ? "..." : "");
        throw ParseError(file_ + ":" + std::to_string(number_) + ": '" + shown + "': " + why +
                         " (expected YAML flow style such as '[4, 16]' or '{block: b1, nodes: \"n[1-4]\"}')");
    }
    std::string scalar() {
        skip();
        if (pos_ >= s_.size()) bad("a value is missing");
        size_t start = pos_;
        char q = s_[pos_];
        if (q == '"' || q == '\'') {
            size_t end = s_.find(q, pos_ + 1);
            if (end == std::string::npos) bad("an unclosed quote");
            pos_ = end + 1;
            return s_.substr(start, pos_ - start);
        }
        while (pos_ < s_.size() && !is_flow_indicator(s_[pos_]) &&
               !(s_[pos_] == ':' && (pos_ + 1 == s_.size() || s_[pos_ + 1] == ' ')))
            ++pos_;
        return trim(s_.substr(start, pos_ - start));
    }
    static bool is_flow_indicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }
    bool at(char c) {
        skip();
        return pos_ < s_.size() && s_[pos_] == c;
    }
    void expect(char c) {
        if (!at(c)) bad(std::string("'") + c + "' expected");
        ++pos_;
    }
    // One value after `head` (which ends in ':' or '-'): a scalar on the same line, a
    // collection on the lines below it.
    void node(const std::string& head, size_t col, std::vector<std::string>& out) {
        if (++depth_ > kMaxFlowDepth) bad("flow collections nested more than " + std::to_string(kMaxFlowDepth) + " deep");
        const std::string pad(col, ' ');
        if (at('[')) {
            ++pos_;
            out.push_back(pad + head);
            while (!at(']')) {
                if (at('[')) bad("a list inside a list");
                if (at('{')) {
                    mapping(pad + "  - ", col + 4, out);
                } else {
                    std::string v = scalar();
                    if (v.empty()) bad("an empty list item");
                    out.push_back(pad + "  - " + v);
                }
                if (!at(',')) break;
                ++pos_;
            }
            expect(']');
        } else if (at('{')) {
            out.push_back(pad + head);
            mapping(pad + "  ", col + 2, out);
        } else {
            out.push_back(pad + head + " " + scalar());
        }
        --depth_;
    }
    // "{k: v, ...}": the first key on `first` ("  - " for a list item), the others at `col`.
    void mapping(const std::string& first, size_t col, std::vector<std::string>& out) {
        expect('{');
        std::string lead = first;
        while (!at('}')) {
            std::string key = scalar();
            if (key.empty()) bad("an empty key");
            expect(':');
            std::vector<std::string> sub;
            node(key + ":", 0, sub);
            for (size_t i = 0; i < sub.size(); ++i)
                out.push_back((i == 0 ? lead : std::string(col, ' ')) + sub[i]);
            lead = std::string(col, ' ');
            if (!at(',')) break;
            ++pos_;
        }
        expect('}');
    }

    std::string s_;
    const std::string& file_;
    int number_;
    size_t pos_ = 0;
    int depth_ = 0;
};

// Where a line's flow value starts ("key: [" or "- {"), npos when it has none.
size_t flow_start(const std::string& text) {
    size_t col = text.find_first_not_of(' ');
    if (col == std::string::npos) return std::string::npos;
    size_t p = col;
    if (text.compare(p, 2, "- ") == 0) p = text.find_first_not_of(' ', p + 1);
    if (p == std::string::npos) return std::string::npos;
    if (text[p] == '[' || text[p] == '{') return p;
    size_t colon = text.find(": ", p);
    if (colon == std::string::npos) return std::string::npos;
    size_t v = text.find_first_not_of(' ', colon + 1);
    return v != std::string::npos && (text[v] == '[' || text[v] == '{') ? v : std::string::npos;
}

// The bracket depth of a flow collection read line by line, quotes skipped:
// each line is looked at once, whatever the collection's length.
class FlowBalance {
public:
    void feed(const std::string& t) {
        for (char c : t) {
            if (quote_) {
                if (c == quote_) quote_ = 0;
            } else if (c == '"' || c == '\'') {
                quote_ = c;
            } else if (c == '[' || c == '{') {
                max_ = std::max(max_, ++depth_);
            } else if (c == ']' || c == '}') {
                --depth_;
            }
        }
    }
    bool open() const { return depth_ > 0; }
    int deepest() const { return max_; }

private:
    int depth_ = 0;
    int max_ = 0;
    char quote_ = 0;
};

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
    std::vector<std::string> pending;  // block lines a flow collection stands for
    size_t next_pending = 0;
    int pending_number = 0;  // the physical line the pending lines come from
    bool nodes_list = false;  // the lines are the items of an entry's "nodes:" list
    auto next_physical = [&]() {
        size_t nl = text.find('\n', start);
        std::string raw(text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
        start = nl == std::string_view::npos ? text.size() : nl + 1;
        if (static_cast<size_t>(++number) > kMaxLines)
            throw ParseError(file + ": more than " + std::to_string(kMaxLines) + " lines (expected a topology.yaml)");
        return raw;
    };
    while (next_pending < pending.size() || start < text.size()) {
        std::string raw;
        int line_number = 0;
        if (next_pending < pending.size()) {
            raw = pending[next_pending++];
            line_number = pending_number;
        } else {
            raw = strip_comment(next_physical());
            line_number = number;
            size_t v = flow_start(raw);
            if (v != std::string::npos && raw.find('\t') == std::string::npos) {
                const int first = number;
                std::string flow = raw.substr(v);
                FlowBalance balance;
                balance.feed(flow);
                while (balance.open() && start < text.size()) {
                    std::string more = strip_comment(next_physical());
                    balance.feed(more);
                    flow += '\n';
                    flow += more;
                    if (flow.size() > kMaxFlowBytes)
                        fail(file, first, trim(raw), "a flow collection ('[...]', '{...}') longer than " +
                                                         std::to_string(kMaxFlowBytes >> 20) + " MiB (unclosed?)");
                    if (balance.deepest() > kMaxFlowDepth)
                        fail(file, first, trim(raw), "flow collections nested more than " +
                                                         std::to_string(kMaxFlowDepth) + " deep");
                }
                std::string head = trim(raw.substr(0, v));
                size_t col = raw.find_first_not_of(' ');
                pending_number = first;
                next_pending = 0;
                if (head != "-") {  // "key: [...]", "- key: {...}"
                    pending = FlowToBlock(flow, file, first).lines(head, col);
                    continue;
                }
                // "- {k: v, ...}": a list item that is a mapping, its first key on the item's line.
                if (flow[0] == '[') fail(file, first, trim(raw), "a list inside a list");
                pending = FlowToBlock(flow, file, first).lines("", 0);
                pending.erase(pending.begin());  // the empty head line
                for (std::string& p : pending) p.insert(0, col, ' ');
                if (!pending.empty()) pending[0].replace(col, 2, "- ");
                continue;
            }
        }
        YamlLine l;
        if (!parse_line(raw, line_number, file, l)) continue;
        if (entry && l.indent <= entry_indent && !(l.indent == entry_indent && !l.item)) entry = nullptr;
        if (l.item && l.key == "topology") {
            topos.push_back(Topology{l.value, false, "", {}});
            entry = nullptr;
            continue;
        }
        if (topos.empty()) fail(file, line_number, trim(raw), "a key before the first '- topology: NAME'");
        Topology& t = topos.back();
        if (l.key == "cluster_default") {
            t.is_default = l.value == "true" || l.value == "True" || l.value == "yes";
        } else if (!entry && t.plugin.empty() && !l.item &&
                   (l.key == "tree" || l.key == "block" || l.key == "flat" || l.key == "ring" ||
                    l.key == "torus3d")) {
            t.plugin = l.key;
        } else if (l.item && (l.key == "switch" || l.key == "block")) {
            if (!valid_island_name(l.value))
                fail(file, line_number, trim(raw), "bad " + l.key + " name '" + l.value + "'");
            t.entries.push_back(Entry{l.key, l.value, "", line_number, trim(raw)});
            entry = &t.entries.back();
            entry_indent = l.indent;
        } else if (entry && l.key == "nodes") {
            entry->nodes = l.value;
            nodes_list = l.value.empty();  // "nodes:" then "- n[1-2]" items (or "nodes: [a, b]")
            continue;
        } else if (entry && nodes_list && l.item && l.key.empty()) {
            entry->nodes += (entry->nodes.empty() ? "" : ",") + l.value;
            continue;
        }
        nodes_list = false;
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
