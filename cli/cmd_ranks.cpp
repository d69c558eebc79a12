// gputopo ranks: the island-ordered ranks a --gpu-topo=island step gets
// (topo/fabric/rank_order.hpp): one row per node in rank order, or every variable of
// one node's tasks with --node.
#include <ostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/output/json_writer.hpp"
#include "topo/fabric/rank_order.hpp"
#include "topo/output/text_table.hpp"

namespace gputopo::cli {

namespace {

std::vector<OptionSpec> ranks_options() {
    return {{"--nodes", "HOSTLIST", "the step's nodes in Slurm's order, e.g. 'gpu[001-064]' (SLURM_STEP_NODELIST)"},
            {"--tasks-per-node", "SPEC", "tasks per node, e.g. 8 or '4(x3),2' (SLURM_STEP_TASKS_PER_NODE; default 1)"},
            {"--islands", "FILE", "gputopo.conf with Island=/BlockName=/TopologyConf= lines"},
            {"--topology-conf", "FILE", "a Slurm topology.conf read after --islands (tree leaves and blocks)"},
            {"--node", "NAME", "show each task of this node with the variables it gets"},
            format_option()};
}

const char* const kUsage =
    "usage: gputopo ranks --nodes HOSTLIST [--tasks-per-node SPEC] [--islands FILE]\n"
    "                     [--topology-conf FILE] [--node NAME] [--format table|json]\n\n"
    "Prints the island-ordered ranks of a --gpu-topo=island step: islands one after another\n"
    "(in the order of their first node), nodes in Slurm's order within an island. A node no\n"
    "file names is an island of its own. See gputopo.conf(5).\n\n";

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
                     ? TaskCounts::uniform(nodes.count(), static_cast<uint32_t>(parse_count("--tasks-per-node", tpn, 1)))
                     : TaskCounts::parse(tpn);
    } catch (const ParseError& e) {
        throw UsageError(std::string("--tasks-per-node: ") + e.what());
    }

    IslandMap map;
    if (parsed.has("--islands")) map = load_islands(parsed.get("--islands"));
    if (parsed.has("--topology-conf")) read_slurm_topology(parsed.get("--topology-conf"), map);
    map.seal();

    if (parsed.has("--node")) {
        const std::string node = parsed.get("--node");
        IslandPlacement first = place_task(nodes, counts, map, node, 0);
        const uint32_t tasks = counts.at(*nodes.index_of(node));  // place_task checked the node is there
        if (json) {
            JsonWriter w(2);
            w.begin_object().key("schema_version").value(kJsonSchemaVersion);
            w.key("node").value(node).key("tasks").begin_array();
            for (uint32_t t = 0; t < tasks; ++t) {
                IslandPlacement p = place_task(nodes, counts, map, node, t);
                w.begin_object(JsonWriter::Inline).key("local_position").value(static_cast<unsigned>(t));
                for (auto& [k, v] : island_env(p)) w.key(k).value(v);
                w.key("island_known").value(p.island_known).end_object();
            }
            w.end_array().end_object();
            out << w.str() << "\n";
            return 0;
        }
        std::vector<std::vector<std::string>> rows{{"POSITION", env::kIsland, env::kIslandRank, env::kIslandSize,
                                                    env::kNumIslands, env::kRank}};
        for (uint32_t t = 0; t < tasks; ++t) {
            std::vector<std::string> row{std::to_string(t)};
            for (auto& kv : island_env(place_task(nodes, counts, map, node, t))) row.push_back(kv.second);
            rows.push_back(row);
        }
        out << node << " (" << (first.island_known ? island_source_name(first.source) : "no island information")
            << "); POSITION is the task's place in the planner's intra-node order\n"
            << text_columns(rows);
        return 0;
    }

    std::vector<NodePlacement> table = place_step(nodes, counts, map);
    if (json) {
        JsonWriter w(2);
        w.begin_object().key("schema_version").value(kJsonSchemaVersion).key("world").value(static_cast<unsigned long long>(counts.tasks()));
        w.key("islands").value(static_cast<unsigned long long>(table.empty() ? 0 : table.back().island_index + 1));
        w.key("nodes").begin_array();
        for (const NodePlacement& r : table) {
            w.begin_object(JsonWriter::Inline)
                .key("node").value(r.node)
                .key("island").value(r.island)
                .key("island_known").value(r.island_known)
                .key("island_index").value(static_cast<unsigned long long>(r.island_index))
                .key("tasks").value(static_cast<unsigned>(r.tasks))
                .key("first_rank").value(static_cast<unsigned long long>(r.first_rank))
                .key("first_island_rank").value(static_cast<unsigned long long>(r.first_island_rank))
                .key("island_size").value(static_cast<unsigned long long>(r.island_size))
                .end_object();
        }
        w.end_array().end_object();
        out << w.str() << "\n";
        return 0;
    }
    std::vector<std::vector<std::string>> rows{{"NODE", "ISLAND", "TASKS", "RANKS", "ISLAND_RANKS", "ISLAND_SIZE"}};
    for (const NodePlacement& r : table) {
        auto span = [&](uint64_t first) {
            return r.tasks <= 1 ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(first + r.tasks - 1);
        };
        rows.push_back({r.node, r.island_known ? r.island : r.island + " (alone)", std::to_string(r.tasks),
                        span(r.first_rank), span(r.first_island_rank), std::to_string(r.island_size)});
    }
    out << text_columns(rows);
    out << counts.tasks() << " tasks on " << nodes.count() << " nodes in "
        << (table.empty() ? 0 : table.back().island_index + 1) << " islands\n";
    return 0;
}

}  // namespace gputopo::cli
