// gputopo ranks: the island-ordered ranks a --gpu-topo=island step gets
// (topo/fabric/rank_order.hpp): one row per node in rank order, or every variable of
// one node's tasks with --node.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <ostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"
#include "topo/fabric/rank_order.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/output/ranks_format.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> ranks_options() {
    return {{"--nodes", "HOSTLIST", "the step's nodes in Slurm's order, e.g. 'gpu[001-064]' (SLURM_STEP_NODELIST)"},
            {"--tasks-per-node", "SPEC", "tasks per node, e.g. 8 or '4(x3),2' (SLURM_STEP_TASKS_PER_NODE; default 1)"},
            {"--islands", "FILE", "gputopo.conf with Island=/BlockName=/TopologyConf= lines"},
            {"--topology-conf", "FILE", "a Slurm topology.conf or topology.yaml in place of Slurm's own (default: the one "
                                "beside SLURM_CONF, else in /etc/slurm, as the plugin reads it)"},
            {"--node", "NAME", "show each task of this node with the variables it gets"},
            {"--layout", "SPEC", "place a parallel layout, e.g. 'tp=8,pp=4[,cp=2,ep=8,order=tp-cp-ep-dp-pp]'"},
            {"--nvlink-domain", "WHAT", "with --layout: node (default), island (NVL72 racks) or GPUs per domain"},
            {"--model", "SPEC", "with --layout: bytes per step crossing islands, e.g. "
                                "'params=70B,layers=80,hidden=8192,seq=4096,micro-batch=1,micro-batches=16'"},
            format_option()};
}

const char* const kUsage =
    "usage: gputopo ranks --nodes HOSTLIST [--tasks-per-node SPEC] [--islands FILE]\n"
    "                     [--topology-conf FILE] [--node NAME] [--format table|json]\n"
    "                     [--layout SPEC [--nvlink-domain node|island|N] [--model SPEC]]\n\n"
    "Prints the island-ordered ranks of a --gpu-topo=island step: islands one after another\n"
    "(in the order of their first node), nodes in Slurm's order within an island. A node no\n"
    "file names is an island of its own. The islands are the plugin's: --islands as its\n"
    "islands=, and Slurm's topology.yaml or topology.conf beside SLURM_CONF (else /etc/slurm)\n"
    "unless --topology-conf names another. See gputopo.conf(5).\n"
    "With --layout, prints the ranks of the layout placement instead (TP/CP/EP groups inside\n"
    "NVLink domains, DP and PP across the fewest islands), the groups that straddle, and with\n"
    "--model the bytes per training step crossing each island's boundary.\n\n";

// The order= a --layout spec gives ("" when none).
std::string given_order(const std::string& spec) {
    for (size_t pos = 0; pos <= spec.size();) {
        const size_t comma = spec.find(',', pos);
        const std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (item.rfind("order=", 0) == 0) return item.substr(6);
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return "";
}

int layout_ranks(const ParsedArgs& parsed, const Hostlist& nodes, const TaskCounts& counts, const IslandMap& map,
                 const std::string& sources, bool json, std::ostream& out) {
    ParallelLayout layout;
    FabricShape shape;
    std::optional<ModelShape> model;
    try {
        layout = ParallelLayout::parse(parsed.get("--layout"));
    } catch (const ParseError& e) {
        throw UsageError(std::string("--layout: ") + e.what());
    }
    // An order may leave out dimensions of size 1 (parallel_layout.hpp): say where they went.
    const std::string order = given_order(parsed.get("--layout"));
    if (!order.empty() && order != layout.order_str())
        std::cerr << "gputopo: note: --layout order '" << order << "' completed to '" << layout.order_str()
                  << "' (the dimensions it leaves out have size 1)\n";
    try {
        shape = parse_nvlink_domain(parsed.get("--nvlink-domain", "node"));
    } catch (const ParseError& e) {
        throw UsageError(std::string("--nvlink-domain: ") + e.what());
    }
    if (parsed.has("--model")) {
        try {
            model = parse_model_shape(parsed.get("--model"));
        } catch (const ParseError& e) {
            throw UsageError(std::string("--model: ") + e.what());
        }
    }
    LayoutPlacement p = [&] {
        try {
            if (!model) return place_layout(nodes, counts, map, shape, layout);
            ParallelLayout resolved = layout;
            resolved.resolve(counts.tasks());
            const EdgeBytes weights = edge_bytes(*model, resolved);
            return place_layout(nodes, counts, map, shape, layout, &weights);
        } catch (const PlanError& e) {
            throw UsageError(std::string("--layout: ") + e.what());
        }
    }();
    const std::vector<GroupSpread> spread = group_spread(p);
    std::optional<LayoutBytes> bytes;
    if (model) {
        LayoutBytes& m = bytes.emplace();
        const std::vector<uint32_t> isl = p.island_of_rank();
        const EdgeBytes edges = edge_bytes(*model, p.layout());
        m.cross = crossing_bytes(p.layout(), isl, edges);
        m.egress = island_egress(p.layout(), isl, edges, p.num_islands());
        m.gpus.assign(p.num_islands(), 0);
        for (uint64_t j = 0; j < p.nodes(); ++j) m.gpus[p.island_of_node(j)] += p.tasks_on(j);
        m.bound = lower_bound_bytes(p.layout(), m.gpus, edges);
    }
    const LayoutView view{p, nodes, map, sources, shape, spread, bytes};
    if (parsed.has("--node")) {
        const std::string node = parsed.get("--node");
        std::optional<uint64_t> j = nodes.index_of(node);
        if (!j) throw UsageError("--node: '" + node + "' is not in --nodes");
        write_layout_node(out, view, node, *j, json);
        return 0;
    }
    write_layout_ranks(out, view, json);
    return 0;
}

}  // namespace

int cmd_ranks(const std::vector<std::string>& args, std::ostream& out) {
    const auto specs = ranks_options();
    ParsedArgs parsed = parse_options("ranks", args, specs);
    if (parsed.help) {
        out << kUsage << options_help(specs);
        return 0;
    }
    if (!parsed.has("--nodes")) throw UsageError("ranks: --nodes HOSTLIST is required (e.g. --nodes 'gpu[001-064]')");
    const bool json = want_json(parsed);
    Hostlist nodes;
    try {
        nodes = Hostlist::parse(parsed.get("--nodes"));
    } catch (const ParseError& e) {
        throw UsageError(std::string("--nodes: ") + e.what());
    }
    if (nodes.empty()) throw UsageError("--nodes: no node in '" + parsed.get("--nodes") + "'");
    TaskCounts counts;
    std::string tpn = parsed.get("--tasks-per-node", "1");
    try {
        counts = tpn.find_first_of("(,") == std::string::npos
                     ? TaskCounts::uniform(nodes.count(), static_cast<uint32_t>(parse_count("--tasks-per-node", tpn, 1, kMaxTasksPerNode)))
                     : TaskCounts::parse(tpn);
    } catch (const ParseError& e) {
        throw UsageError(std::string("--tasks-per-node: ") + e.what());
    }

    // The islands the plugin's --gpu-topo=island step would get (load_step_islands): --islands
    // as its islands=, Slurm's topology.yaml/topology.conf beside SLURM_CONF (else /etc/slurm),
    // or --topology-conf in its place.
    auto process_env = [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
    StepIslandMap step = load_step_islands(parsed.get("--islands", ""), slurm_config_dir(process_env),
                                           parsed.get("--topology-conf", ""));
    const IslandMap& map = step.map;
    const std::string& sources = step.sources;

    if (parsed.has("--layout")) return layout_ranks(parsed, nodes, counts, map, sources, json, out);
    for (const char* o : {"--nvlink-domain", "--model"})
        if (parsed.has(o)) throw UsageError(std::string("ranks: ") + o + " needs --layout SPEC");

    if (parsed.has("--node")) {
        const std::string node = parsed.get("--node");
        std::vector<IslandPlacement> tasks{place_task(nodes, counts, map, node, 0)};
        const uint32_t n = counts.at(*nodes.index_of(node));  // place_task checked the node is there
        for (uint32_t t = 1; t < n; ++t) tasks.push_back(place_task(nodes, counts, map, node, t));
        write_island_ranks_node(out, node, tasks, json);
        return 0;
    }

    write_island_ranks(out, place_step(nodes, counts, map), counts, nodes, sources, json);
    return 0;
}

}  // namespace gputopo::cli
