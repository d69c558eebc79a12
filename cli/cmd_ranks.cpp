// gputopo ranks: the island-ordered ranks a --gpu-topo=island step gets
// (topo/fabric/rank_order.hpp): one row per node in rank order, or every variable of
// one node's tasks with --node.
#include <cstdio>
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
#include "topo/output/json_writer.hpp"
#include "topo/fabric/rank_order.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/output/text_table.hpp"

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

std::string rank_spans(const LayoutPlacement& p, uint64_t node) {
    std::string out;
    const uint32_t n = p.tasks_on(node);
    for (uint32_t t = 0; t < n;) {
        uint32_t e = t;
        while (e + 1 < n && p.rank(node, e + 1) == p.rank(node, e) + 1) ++e;
        if (!out.empty()) out += ',';
        out += std::to_string(p.rank(node, t));
        if (e > t) out += "-" + std::to_string(p.rank(node, e));
        t = e + 1;
    }
    return out;
}

std::string coords_text(const ParallelLayout& l, uint64_t rank) {
    ParCoords c = l.coords_of(rank);
    std::string s;
    for (ParDim d : {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP}) {
        if (l.size(d) <= 1) continue;
        if (!s.empty()) s += ' ';
        s += std::string(par_dim_name(d)) + "=" + std::to_string(c[static_cast<size_t>(d)]);
    }
    return s;
}

std::string gb(double bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", bytes / 1e9);
    return b;
}

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
    const ParallelLayout& l = p.layout();
    std::vector<GroupSpread> spread = group_spread(p);
    std::vector<double> egress;
    CrossBytes cross;
    BoundBytes bound;
    EdgeBytes edges;
    if (model) {
        std::vector<uint32_t> isl = p.island_of_rank();
        edges = edge_bytes(*model, l);
        cross = crossing_bytes(l, isl, edges);
        egress = island_egress(l, isl, edges, p.num_islands());
        std::vector<uint64_t> gpus(p.num_islands(), 0);
        for (uint64_t j = 0; j < p.nodes(); ++j) gpus[p.island_of_node(j)] += p.tasks_on(j);
        bound = lower_bound_bytes(l, gpus, edges);
    }
    auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };

    if (parsed.has("--node")) {
        const std::string node = parsed.get("--node");
        std::optional<uint64_t> j = nodes.index_of(node);
        if (!j) throw UsageError("--node: '" + node + "' is not in --nodes");
        std::vector<std::vector<std::string>> rows{{"POSITION", env::kRankVar, "COORDINATES"}};
        JsonWriter w(2);
        w.begin_object().key("schema_version").value(kJsonSchemaVersion).key("node").value(node).key("layout").value(l.str());
        w.key("tasks").begin_array();
        for (uint32_t t = 0; t < p.tasks_on(*j); ++t) {
            uint64_t r = p.rank(*j, t);
            rows.push_back({std::to_string(t), std::to_string(r), coords_text(l, r)});
            w.begin_object(JsonWriter::Inline).key("local_position").value(static_cast<unsigned>(t)).key("rank").value(ull(r));
            ParCoords c = l.coords_of(r);
            for (ParDim d : {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP})
                w.key(par_dim_name(d)).value(ull(c[static_cast<size_t>(d)]));
            w.end_object();
        }
        w.end_array().end_object();
        if (json)
            out << w.str() << "\n";
        else
            out << node << " (" << l.str() << "); POSITION is the task's place in the planner's intra-node order\n"
                << text_columns(rows);
        return 0;
    }

    if (json) {
        JsonWriter w(2);
        w.begin_object().key("schema_version").value(kJsonSchemaVersion).key("layout").value(l.str());
        w.key("world").value(ull(p.world())).key("islands").value(ull(p.num_islands()));
        w.key("pipelines_first").value(p.pipelines_first());
        w.key("nodes").begin_array();
        for (uint64_t j = 0; j < p.nodes(); ++j) {
            w.begin_object(JsonWriter::Inline).key("node").value(nodes.nth(j));
            w.key("island").value(island_name(p, nodes, map, p.island_of_node(j)));
            w.key("island_known").value(p.island_known(p.island_of_node(j)));
            w.key("ranks").begin_array(JsonWriter::Inline);
            for (uint32_t t = 0; t < p.tasks_on(j); ++t) w.value(ull(p.rank(j, t)));
            w.end_array().end_object();
        }
        w.end_array().key("groups").begin_array();
        for (const GroupSpread& g : spread) {
            w.begin_object(JsonWriter::Inline).key("dim").value(par_dim_name(g.dim)).key("size").value(ull(g.size));
            w.key("groups").value(ull(g.groups)).key("straddling").value(ull(g.straddling));
            w.key("min_islands").value(ull(g.min_islands)).key("max_islands").value(ull(g.max_islands));
            w.key("first_ranks_straddling").begin_array(JsonWriter::Inline);
            for (uint64_t r : g.examples) w.value(ull(r));
            w.end_array();
            if (!g.why.empty()) w.key("why").value(g.why);
            w.end_object();
        }
        w.end_array();
        if (model) {
            w.key("bytes_per_step").begin_object(JsonWriter::Inline);
            w.key("tp").value(cross.tp).key("cp").value(cross.cp).key("ep").value(cross.ep).key("pp").value(cross.pp);
            w.key("dp").value(cross.dp).key("total").value(cross.total()).key("lower_bound").value(bound.total());
            w.end_object();
            w.key("island_bytes_per_step").begin_array();
            for (uint64_t i = 0; i < p.num_islands(); ++i)
                w.begin_object(JsonWriter::Inline).key("island").value(island_name(p, nodes, map, i)).key("bytes").value(egress[i]).end_object();
            w.end_array();
        }
        w.end_object();
        out << w.str() << "\n";
        return 0;
    }

    std::vector<std::vector<std::string>> rows{{"NODE", "ISLAND", "TASKS", "RANKS", "FIRST_RANK_COORDINATES"}};
    for (uint64_t j = 0; j < p.nodes(); ++j) {
        uint64_t isl = p.island_of_node(j);
        std::string name = island_name(p, nodes, map, isl);
        rows.push_back({nodes.nth(j), p.island_known(isl) ? name : name + " (alone)", std::to_string(p.tasks_on(j)),
                        rank_spans(p, j), p.tasks_on(j) ? coords_text(l, p.rank(j, 0)) : std::string()});
    }
    out << "layout " << l.str() << " on " << p.world() << " tasks, " << p.nodes() << " nodes, " << p.num_islands()
        << " islands (from " << sources << "); NVLink domain: "
        << (shape.islands_are_nvlink ? std::string("island")
                                     : shape.nvlink_gpus ? std::to_string(shape.nvlink_gpus) + " GPUs" : std::string("node"))
        << (p.pipelines_first() ? "; whole pipelines together (the model's pipeline traffic outweighs DP's)" : "")
        << "\n"
        << text_columns(rows);
    std::vector<std::vector<std::string>> groups{{"GROUP", "SIZE", "GROUPS", "STRADDLING", "ISLANDS_PER_GROUP", "FIRST_RANKS"}};
    for (const GroupSpread& g : spread) {
        std::string ex;
        for (uint64_t r : g.examples) ex += (ex.empty() ? "" : ",") + std::to_string(r);
        groups.push_back({par_dim_name(g.dim), std::to_string(g.size), std::to_string(g.groups),
                          std::to_string(g.straddling),
                          g.min_islands == g.max_islands ? std::to_string(g.min_islands)
                                                         : std::to_string(g.min_islands) + "-" + std::to_string(g.max_islands),
                          ex.empty() ? "-" : ex});
    }
    out << "\ngroups (STRADDLING: tp/cp/ep groups in more than one NVLink domain, dp/pp groups in more than one island)\n"
        << text_columns(groups);
    for (const GroupSpread& g : spread)
        if (!g.why.empty()) out << par_dim_name(g.dim) << " groups straddle: " << g.why << "\n";
    if (model) {
        out << "\nbytes per training step crossing island boundaries (topo/fabric/layout_traffic.hpp model): TP "
            << gb(cross.tp) << " GB, CP " << gb(cross.cp) << " GB, EP " << gb(cross.ep) << " GB, PP " << gb(cross.pp)
            << " GB, DP " << gb(cross.dp) << " GB; total " << gb(cross.total()) << " GB, lower bound "
            << gb(bound.total()) << " GB\n";
        std::vector<std::vector<std::string>> isl{{"ISLAND", "GPUS", "GB_THROUGH_UPLINKS"}};
        std::vector<uint64_t> gpus(p.num_islands(), 0);
        for (uint64_t j = 0; j < p.nodes(); ++j) gpus[p.island_of_node(j)] += p.tasks_on(j);
        for (uint64_t i = 0; i < p.num_islands(); ++i)
            isl.push_back({island_name(p, nodes, map, i), std::to_string(gpus[i]), gb(egress[i])});
        out << text_columns(isl);
    }
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
        << (table.empty() ? 0 : table.back().island_index + 1) << " islands (from " << sources << ")\n";
    return 0;
}

}  // namespace gputopo::cli
