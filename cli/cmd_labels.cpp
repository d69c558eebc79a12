// gputopo labels: the Kubernetes node labels a topology-aware scheduler needs
// (Kueue Topology, KAI Topology, JobSet placement), from the same island
// sources the plugin uses (topo/fabric/node_labels.hpp has the keys and
// values): `kubectl label node ... --overwrite` lines, or JSON.
#include <ostream>
#include <sstream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "topo/core/conf_lines.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/suggest.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/node_labels.hpp"
#include "topo/output/json_writer.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> labels_options() {
    return {{"--nodes", "HOSTLIST", "the nodes to label, e.g. 'gpu[001-064]'"},
            {"--islands", "FILE", "gputopo.conf with Island=/BlockName=/TopologyConf= lines (the plugin's islands=)"},
            {"--topology-conf", "FILE", "a Slurm topology.conf (leaf, spine and core switches; blocks)"},
            {"--clique", "", "also label the one node of --nodes with its NVML fabric clique (this machine, or --topology)"},
            topology_option(),
            {"--key-set", "topograph|topograph-legacy", "fabric.topograph.run/tier-N + accelerator.topograph.run/* (default), or network.topology.nvidia.com/*"},
            {"--keys", "NAME=KEY,...", "replace label keys: accelerator, sub-domain, leaf, spine, core, island (gputopo.conf islands)"},
            format_option()};
}

const char* const kUsage =
    "usage: gputopo labels --nodes HOSTLIST [--islands FILE] [--topology-conf FILE] [--clique [--topology FILE]]\n"
    "                      [--key-set topograph|topograph-legacy] [--keys NAME=KEY,...] [--format table|json]\n\n"
    "Prints each node's topology labels as `kubectl label node NODE KEY=VALUE ... --overwrite` lines\n"
    "(or JSON), with the keys NVIDIA Topograph writes (fabric.topograph.run/tier-0 for the leaf switch,\n"
    "tier-1, tier-2 above it, accelerator.topograph.run/domain and sub-domain for NVLink domains), from\n"
    "the islands the plugin uses. A node no source names gets no label.\n\n";

void apply_keys(LabelKeys& keys, const std::string& text) {
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        size_t eq = item.find('=');
        std::string name = item.substr(0, eq), key = eq == std::string::npos ? "" : item.substr(eq + 1);
        std::string* slot = name == "accelerator" ? &keys.accelerator
                            : name == "sub-domain" ? &keys.sub_domain
                            : name == "leaf"      ? &keys.leaf
                            : name == "spine"     ? &keys.spine
                            : name == "core"      ? &keys.core
                            : name == "island"    ? &keys.island
                                                  : nullptr;
        if (!slot || key.empty() || key.size() > 253 || key.find_first_of(" \t=") != std::string::npos) {
            const std::string near =
                slot ? "" : nearest_word(name, {"accelerator", "sub-domain", "leaf", "spine", "core", "island"});
            throw UsageError("--keys: '" + item + "': " + (near.empty() ? "" : "did you mean " + near + "? ") +
                             "expected NAME=KEY with NAME accelerator, sub-domain, leaf, spine, core or island");
        }
        *slot = key;
    }
}

}  // namespace

int cmd_labels(const std::vector<std::string>& args, std::ostream& out) {
    const auto specs = labels_options();
    ParsedArgs parsed = parse_options("labels", args, specs);
    if (parsed.help) {
        out << kUsage << options_help(specs);
        return 0;
    }
    if (!parsed.has("--nodes")) throw UsageError("labels: --nodes HOSTLIST is required (e.g. --nodes 'gpu[001-064]')");
    Hostlist nodes;
    try {
        nodes = Hostlist::parse(parsed.get("--nodes"));
    } catch (const ParseError& e) {
        throw UsageError(std::string("--nodes: ") + e.what());
    }
    if (nodes.empty() || nodes.count() > 1000000) throw UsageError("--nodes: expected 1 to 1000000 nodes");
    std::string set = parse_choice("--key-set", parsed.get("--key-set", "topograph"), {"topograph", "topograph-legacy"});
    LabelKeys keys = set == "topograph" ? LabelKeys{} : legacy_label_keys();
    if (parsed.has("--keys")) apply_keys(keys, parsed.get("--keys"));

    IslandMap map;
    std::vector<std::string> confs;
    if (parsed.has("--islands")) read_island_conf(parsed.get("--islands"), map, &confs);
    if (parsed.has("--topology-conf")) confs.push_back(parsed.get("--topology-conf"));
    std::map<std::string, std::string> parents;
    for (const std::string& c : confs) {
        std::string text = read_text_file(c, "Slurm topology.conf");
        parse_slurm_topology(text, c, map);
        for (auto& [k, v] : parse_switch_parents(text, c)) parents.emplace(k, v);
    }
    map.seal();

    std::string clique;
    if (parsed.has("--clique")) {
        if (nodes.count() != 1) throw UsageError("--clique: the clique is one node's; give exactly one node in --nodes");
        clique = nvml_clique_of(load_node(parsed));
    } else if (parsed.has("--topology")) {
        throw UsageError("--topology: only with --clique");
    }

    const bool json = want_json(parsed);
    JsonWriter w(2);
    if (json) w.begin_object().key("nodes").begin_array();
    for (uint64_t i = 0; i < nodes.count(); ++i) {
        std::string node = nodes.nth(i);
        auto labels = node_labels(map, parents, node, clique, keys);
        if (json) {
            w.begin_object(JsonWriter::Inline).key("node").value(node).key("labels").begin_object(JsonWriter::Inline);
            for (auto& [k, v] : labels) w.key(k).value(v);
            w.end_object().end_object();
            continue;
        }
        if (labels.empty()) {
            out << "# " << node << ": no island source names it\n";
            continue;
        }
        out << "kubectl label node " << node;
        for (auto& [k, v] : labels) out << " " << k << "=" << v;
        out << " --overwrite\n";
    }
    if (json) {
        w.end_array().end_object();
        out << w.str() << "\n";
    }
    return 0;
}

}  // namespace gputopo::cli
