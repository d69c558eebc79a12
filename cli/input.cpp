#include "cli/input.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <iostream>
#include <optional>

#include "spank/plugstack_args.hpp"
#include "spank/plugstack_file.hpp"
#include "step/node_read.hpp"
#include "step/topology_cache.hpp"
#include "step/topology_path.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/host.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/plan/nic_selection.hpp"
#include "topo/sources/nic_policy.hpp"
#include "topo/sources/nic_state.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::cli {

OptionSpec topology_option() {
    return {"--topology", "FILE", "read an hwloc XML or NCCL/RCCL topology XML file instead of this machine"};
}

OptionSpec format_option() { return {"--format", "table|json", "output format (default: table)"}; }

OptionSpec node_option() {
    return {"--node", "NAME", "read the topology file or cache the plugin uses for node NAME (plugstack.conf's "
                              "topology= or cache=, beside SLURM_CONF, else in /etc/slurm)"};
}

std::string plugin_topology_file(const std::string& node) {
    auto env = [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
    const std::string plugstack = slurm_config_dir(env) + "/plugstack.conf";
    std::optional<spank::PluginConfig> site;  // the site's line, read as gputopo-launch reads it
    try {
        site = spank::site_plugin_config(plugstack);
    } catch (const TopologyError& e) {
        throw TopologyError("--node " + node + ": " + e.what());
    }
    struct stat sb {};
    if (!site && ::stat(plugstack.c_str(), &sb) != 0)
        throw TopologyError("--node " + node + ": " + plugstack +
                            " does not exist (expected Slurm's plugstack.conf, in SLURM_CONF's directory, else /etc/slurm)");
    if (!site)
        throw TopologyError("--node " + node + ": " + plugstack +
                            " loads no gputopo.so (expected a line 'optional PATH/gputopo.so topology=... or cache=...')");
    const spank::PluginConfig& config = *site;
    if (!config.topology.empty()) {  // %n and %h both NAME: the file the plugin reads on that node
        try {
            return step::expand_path(config.topology, node, node);
        } catch (const ParseError& e) {
            throw UsageError("--node " + node + ": " + e.what());
        }
    }
    if (config.cache_dir.empty())
        throw TopologyError("--node " + node + ": the plugin's line in " + plugstack +
                            " has neither topology= nor cache=: it discovers each node live; run gputopo on " + node +
                            " itself, or give --topology FILE");
    const std::string cached = step::cache_xml_path(config.cache_dir, node);
    struct stat st;
    if (::stat(cached.c_str(), &st) != 0)
        throw TopologyError("--node " + node + ": no cache file " + cached +
                            " (the plugin's cache= lives on each node's disk: run gputopo on " + node +
                            " itself, or give --topology FILE)");
    return cached;
}

std::vector<OptionSpec> nic_policy_options() {
    return {{"--nic-include", "LIST", "only these NICs carry GPU traffic (RDMA devices, netdevs or PCI bus ids)"},
            {"--nic-exclude", "LIST", "never these NICs (storage, management HCA, bond), as plugstack nic_exclude="}};
}

NicPolicy nic_policy(const ParsedArgs& args) {
    NicPolicy p;
    try {
        if (args.has("--nic-include")) p.include = parse_nic_list(args.get("--nic-include"), "--nic-include ");
        if (args.has("--nic-exclude")) p.exclude = parse_nic_list(args.get("--nic-exclude"), "--nic-exclude ");
    } catch (const ParseError& e) {
        throw UsageError(e.what());
    }
    return p;
}

namespace {

// A file name as a topology pattern: every '%' literal.
std::string literal_pattern(const std::string& path) {
    std::string out;
    for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
    return out;
}

// The one node read (step/node_read.hpp): the file given, which may describe
// another machine (not refined from this one), else this machine live with
// GPUTOPO_NVML_LIBRARY and GPUTOPO_NVML_TIMEOUT. The NIC policy is load_node's.
Node read_node(const ParsedArgs& args) {
    if (args.has("--node") && args.has("--topology")) throw UsageError("--node and --topology exclude each other");
    step::NodeSource source;
    source.file_on_this_node = false;
    source.live = live_sources_from_environment();
    if (args.has("--topology") || args.has("--node")) {
        const std::string path =
            args.has("--node") ? plugin_topology_file(args.get("--node")) : args.get("--topology");
        if (path.empty()) throw UsageError("empty value for --topology (expected a topology file)");
        source.topology = literal_pattern(path);
    }
    return step::read_step_node(source, host_name(), host_name()).node;
}

}  // namespace

namespace {

// --nic-include that names no NIC of the node would leave every task without
// a NIC: a typo, not a policy (a name among others that this node lacks stays a
// warning, as in plugstack.conf, where one list serves every node).
void check_nic_include(const Node& node, const NicPolicy& policy, const std::string& text) {
    if (policy.include.empty()) return;
    for (const auto& nic : node.nics)
        for (const auto& name : policy.include)
            if (nic_matches(nic, name)) return;
    std::string have;
    for (const auto& nic : node.nics) have += (have.empty() ? "" : ", ") + nic.name;
    throw UsageError("--nic-include '" + text + "' names no NIC of " +
                     (node.source.empty() ? std::string("the node") : node.source) + " (" +
                     (have.empty() ? std::string("it has none") : "it has " + have) + ")");
}

}  // namespace

Node load_node(const ParsedArgs& args) {
    const NicPolicy policy = nic_policy(args);  // checked before the topology is read
    Node node = read_node(args);
    check_nic_include(node, policy, args.get("--nic-include"));
    add_nic_fallback_warnings(node);  // a file's port states count as live ones do
    for (auto& w : apply_nic_policy(node, policy)) node.warnings.push_back(std::move(w));
    return node;
}

OptionSpec picture_format_option() {
    return {"--format", "table|json|svg|dot", "output format (default: table); svg and dot draw the node"};
}

std::string picture_format(const ParsedArgs& args) {
    return parse_choice("--format", args.get("--format", "table"), {"table", "json", "svg", "dot"});
}

PlanRequest default_plan_request(const Node& node) {
    PlanRequest req;
    for (const auto& g : node.gpus) req.gpus.push_back(g.index);
    req.ntasks = req.gpus.empty() ? 1 : static_cast<int>(req.gpus.size());
    req.mode = Mode::Closest;
    return req;
}

void print_warnings(const Node& node) {
    for (const auto& w : node.warnings) std::cerr << "gputopo: warning: " << w << "\n";
}

bool want_json(const ParsedArgs& args) {
    return parse_choice("--format", args.get("--format", "table"), {"table", "json"}) == "json";
}

}  // namespace gputopo::cli
