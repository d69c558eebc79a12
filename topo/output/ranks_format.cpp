#include "topo/output/ranks_format.hpp"

#include <cstdio>

#include "topo/core/env_names.hpp"
#include "topo/output/json_writer.hpp"
#include "topo/output/text_table.hpp"

namespace gputopo {

namespace {

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

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

void write_layout_json(std::ostream& out, const LayoutView& v) {
    const LayoutPlacement& p = v.placement;
    JsonWriter w(2);
    w.begin_object().key("schema_version").value(kJsonSchemaVersion).key("layout").value(p.layout().str());
    w.key("world").value(ull(p.world())).key("islands").value(ull(p.num_islands()));
    w.key("pipelines_first").value(p.pipelines_first());
    w.key("nodes").begin_array();
    for (uint64_t j = 0; j < p.nodes(); ++j) {
        w.begin_object(JsonWriter::Inline).key("node").value(v.nodes.nth(j));
        w.key("island").value(island_name(p, v.nodes, v.map, p.island_of_node(j)));
        w.key("island_known").value(p.island_known(p.island_of_node(j)));
        w.key("ranks").begin_array(JsonWriter::Inline);
        for (uint32_t t = 0; t < p.tasks_on(j); ++t) w.value(ull(p.rank(j, t)));
        w.end_array().end_object();
    }
    w.end_array().key("groups").begin_array();
    for (const GroupSpread& g : v.spread) {
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
    if (v.bytes) {
        const CrossBytes& cross = v.bytes->cross;
        w.key("bytes_per_step").begin_object(JsonWriter::Inline);
        w.key("tp").value(cross.tp).key("cp").value(cross.cp).key("ep").value(cross.ep).key("pp").value(cross.pp);
        w.key("dp").value(cross.dp).key("total").value(cross.total()).key("lower_bound").value(v.bytes->bound.total());
        w.end_object();
        w.key("island_bytes_per_step").begin_array();
        for (uint64_t i = 0; i < p.num_islands(); ++i)
            w.begin_object(JsonWriter::Inline).key("island").value(island_name(p, v.nodes, v.map, i))
                .key("bytes").value(v.bytes->egress[i]).end_object();
        w.end_array();
    }
    w.end_object();
    out << w.str() << "\n";
}

void write_layout_text(std::ostream& out, const LayoutView& v) {
    const LayoutPlacement& p = v.placement;
    const ParallelLayout& l = p.layout();
    std::vector<std::vector<std::string>> rows{{"NODE", "ISLAND", "TASKS", "RANKS", "FIRST_RANK_COORDINATES"}};
    for (uint64_t j = 0; j < p.nodes(); ++j) {
        uint64_t isl = p.island_of_node(j);
        std::string name = island_name(p, v.nodes, v.map, isl);
        rows.push_back({v.nodes.nth(j), p.island_known(isl) ? name : name + " (alone)", std::to_string(p.tasks_on(j)),
                        rank_spans(p, j), p.tasks_on(j) ? coords_text(l, p.rank(j, 0)) : std::string()});
    }
    out << "layout " << l.str() << " on " << p.world() << " tasks, " << p.nodes() << " nodes, " << p.num_islands()
        << " islands (from " << v.sources << "); NVLink domain: "
        << (v.shape.islands_are_nvlink ? std::string("island")
                                       : v.shape.nvlink_gpus ? std::to_string(v.shape.nvlink_gpus) + " GPUs" : std::string("node"))
        << (p.pipelines_first() ? "; whole pipelines together (the model's pipeline traffic outweighs DP's)" : "")
        << "\n"
        << text_columns(rows);
    std::vector<std::vector<std::string>> groups{{"GROUP", "SIZE", "GROUPS", "STRADDLING", "ISLANDS_PER_GROUP", "FIRST_RANKS"}};
    for (const GroupSpread& g : v.spread) {
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
    for (const GroupSpread& g : v.spread)
        if (!g.why.empty()) out << par_dim_name(g.dim) << " groups straddle: " << g.why << "\n";
    if (v.bytes) {
        const CrossBytes& cross = v.bytes->cross;
        out << "\nbytes per training step crossing island boundaries (topo/fabric/layout_traffic.hpp model): TP "
            << gb(cross.tp) << " GB, CP " << gb(cross.cp) << " GB, EP " << gb(cross.ep) << " GB, PP " << gb(cross.pp)
            << " GB, DP " << gb(cross.dp) << " GB; total " << gb(cross.total()) << " GB, lower bound "
            << gb(v.bytes->bound.total()) << " GB\n";
        std::vector<std::vector<std::string>> isl{{"ISLAND", "GPUS", "GB_THROUGH_UPLINKS"}};
        for (uint64_t i = 0; i < p.num_islands(); ++i)
            isl.push_back({island_name(p, v.nodes, v.map, i), std::to_string(v.bytes->gpus[i]), gb(v.bytes->egress[i])});
        out << text_columns(isl);
    }
}

}  // namespace

void write_island_ranks(std::ostream& out, const std::vector<NodePlacement>& table, const TaskCounts& counts,
                        const Hostlist& nodes, const std::string& sources, bool json) {
    if (json) {
        JsonWriter w(2);
        w.begin_object().key("schema_version").value(kJsonSchemaVersion).key("world").value(ull(counts.tasks()));
        w.key("islands").value(ull(table.empty() ? 0 : table.back().island_index + 1));
        w.key("nodes").begin_array();
        for (const NodePlacement& r : table) {
            w.begin_object(JsonWriter::Inline)
                .key("node").value(r.node)
                .key("island").value(r.island)
                .key("island_known").value(r.island_known)
                .key("island_index").value(ull(r.island_index))
                .key("tasks").value(static_cast<unsigned>(r.tasks))
                .key("first_rank").value(ull(r.first_rank))
                .key("first_island_rank").value(ull(r.first_island_rank))
                .key("island_size").value(ull(r.island_size))
                .end_object();
        }
        w.end_array().end_object();
        out << w.str() << "\n";
        return;
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
}

void write_island_ranks_node(std::ostream& out, const std::string& node, const std::vector<IslandPlacement>& tasks,
                             bool json) {
    if (json) {
        JsonWriter w(2);
        w.begin_object().key("schema_version").value(kJsonSchemaVersion);
        w.key("node").value(node).key("tasks").begin_array();
        for (uint32_t t = 0; t < tasks.size(); ++t) {
            w.begin_object(JsonWriter::Inline).key("local_position").value(static_cast<unsigned>(t));
            for (auto& [k, v] : island_env(tasks[t])) w.key(k).value(v);
            w.key("island_known").value(tasks[t].island_known).end_object();
        }
        w.end_array().end_object();
        out << w.str() << "\n";
        return;
    }
    std::vector<std::vector<std::string>> rows{{"POSITION", env::kIsland, env::kIslandRank, env::kIslandSize,
                                                env::kNumIslands, env::kRank}};
    for (uint32_t t = 0; t < tasks.size(); ++t) {
        std::vector<std::string> row{std::to_string(t)};
        for (auto& kv : island_env(tasks[t])) row.push_back(kv.second);
        rows.push_back(row);
    }
    const bool known = !tasks.empty() && tasks[0].island_known;
    out << node << " (" << (known ? island_source_name(tasks[0].source) : "no island information")
        << "); POSITION is the task's place in the planner's intra-node order\n"
        << text_columns(rows);
}

void write_layout_ranks(std::ostream& out, const LayoutView& v, bool json) {
    if (json)
        write_layout_json(out, v);
    else
        write_layout_text(out, v);
}

void write_layout_node(std::ostream& out, const LayoutView& v, const std::string& node, uint64_t j, bool json) {
    const LayoutPlacement& p = v.placement;
    const ParallelLayout& l = p.layout();
    std::vector<std::vector<std::string>> rows{{"POSITION", env::kRankVar, "COORDINATES"}};
    JsonWriter w(2);
    w.begin_object().key("schema_version").value(kJsonSchemaVersion).key("node").value(node).key("layout").value(l.str());
    w.key("tasks").begin_array();
    for (uint32_t t = 0; t < p.tasks_on(j); ++t) {
        uint64_t r = p.rank(j, t);
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
}

}  // namespace gputopo
