#include "cli/input.hpp"

#include <iostream>

#include "topo/core/errors.hpp"
#include "topo/sources/nic_policy.hpp"
#include "topo/sources/nic_state.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::cli {

OptionSpec topology_option() {
    return {"--topology", "FILE", "read an hwloc XML or NCCL/RCCL topology XML file instead of this machine"};
}

OptionSpec format_option() { return {"--format", "table|json", "output format (default: table)"}; }

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

Node read_node(const ParsedArgs& args) {
    if (args.has("--topology")) {
        const std::string path = args.get("--topology");
        if (path.empty()) throw UsageError("empty value for --topology (expected a topology file)");
        Node node = load_topology_file(path);
        // A file's port states count too: say which GPUs lost their nearest
        // NIC, as live discovery does (topo/sources/source_merge.cpp).
        for (const auto& f : nic_fallbacks(node)) node.warnings.push_back(describe(f));
        return node;
    }
    return discover_live(live_sources_from_environment());  // hwloc refined by NVML and NIC port state (topo/sources/source_merge.hpp)
}

}  // namespace

Node load_node(const ParsedArgs& args) {
    const NicPolicy policy = nic_policy(args);  // checked before the topology is read
    Node node = read_node(args);
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
