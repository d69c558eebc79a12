#include "step/task_ranks.hpp"

#include <algorithm>
#include <cstdlib>

#include "step/slurm_placement.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"
#include "topo/fabric/slurm_islands.hpp"

namespace gputopo::step {

namespace {

std::string first_of(const Getenv& env, const char* a, const char* b, std::string* which) {
    for (const char* n : {a, b}) {
        if (auto v = env(n); v && !v->empty()) {
            *which = n;
            return *v;
        }
    }
    throw PlanError(std::string("neither ") + a + " nor " + b +
                    " is set (expected Slurm to give the step's nodes and tasks per node)");
}

struct StepNodes {
    Hostlist nodes;
    TaskCounts counts;
};

StepNodes step_nodes(const Getenv& env) {
    std::string nodes_var, counts_var;
    std::string nodelist = first_of(env, env::kSlurmStepNodelist, env::kSlurmJobNodelist, &nodes_var);
    std::string counts_text = first_of(env, env::kSlurmStepTasksPerNode, env::kSlurmTasksPerNode, &counts_var);
    StepNodes in;
    try {
        in.nodes = Hostlist::parse(nodelist);
    } catch (const ParseError& e) {
        throw ParseError(nodes_var + ": " + e.what());
    }
    try {
        in.counts = TaskCounts::parse(counts_text);
    } catch (const ParseError& e) {
        throw ParseError(counts_var + ": " + e.what());
    }
    return in;
}

uint32_t task_position(const Plan& plan, int task) {
    std::vector<uint32_t> positions = local_positions(plan);
    if (task < 0 || static_cast<size_t>(task) >= positions.size())
        throw PlanError("task " + std::to_string(task) + " is not in this node's plan");
    return positions[static_cast<size_t>(task)];
}

// k when node `node`'s ranks are k*n .. k*n+n-1 and every node has n tasks.
// O(tasks on the node).
std::optional<uint64_t> node_block(const LayoutPlacement& p, const TaskCounts& counts, uint64_t node) {
    if (counts.runs().size() != 1 || counts.runs()[0].first == 0) return std::nullopt;
    const uint32_t n = counts.runs()[0].first;
    uint64_t lo = p.world(), hi = 0;
    for (uint32_t pos = 0; pos < n; ++pos) {
        const uint64_t r = p.rank(node, pos);
        lo = std::min(lo, r);
        hi = std::max(hi, r);
    }
    if (hi - lo + 1 != n || lo % n != 0) return std::nullopt;  // ranks are distinct: n of them in a span of n
    return lo / n;
}

}  // namespace

uint64_t island_node_rank(const Hostlist& nodes, const TaskCounts& counts, const IslandMap& map,
                          const std::string& node_name, const IslandPlacement& p, uint32_t local_position) {
    if (counts.runs().size() == 1 && counts.runs()[0].first > 0)
        return (p.rank - local_position) / counts.runs()[0].first;
    std::vector<NodePlacement> rows = place_step(nodes, counts, map);
    for (size_t i = 0; i < rows.size(); ++i)
        if (rows[i].node == node_name) return i;
    throw PlanError("node " + node_name + " is not in the step's node list");
}

Plan local_id_order(int tasks) {
    Plan plan;
    plan.tasks.resize(static_cast<size_t>(tasks < 1 ? 1 : tasks));
    for (size_t i = 0; i < plan.tasks.size(); ++i) plan.tasks[i].task = static_cast<int>(i);
    return plan;
}

LayoutTaskRank layout_task_rank(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                                const Getenv& env, const LayoutRequest& request) {
    LayoutTaskRank out;
    try {
        std::optional<ModelShape> model;
        if (!request.model.empty()) model = parse_model_shape(request.model);
        const ParallelLayout layout = ParallelLayout::parse(request.layout);
        const FabricShape shape = parse_nvlink_domain(request.nvlink_domain);
        StepNodes in = step_nodes(env);
        const uint32_t position = task_position(plan, task);
        std::optional<uint64_t> me = in.nodes.index_of(node_name);
        if (!me)
            throw PlanError("node '" + node_name + "' is not in the step's node list" +
                            (in.nodes.count() <= 64 ? " '" + in.nodes.ranged() + "'" : std::string()));
        std::optional<EdgeBytes> weights;
        if (model) {
            ParallelLayout resolved = layout;
            resolved.resolve(in.counts.tasks());
            weights = edge_bytes(*model, resolved);
        }
        LayoutPlacement p = place_layout(in.nodes, in.counts, map, shape, layout, weights ? &*weights : nullptr);
        const uint64_t rank = p.rank(*me, position);
        out.rank = std::to_string(rank);
        out.world = std::to_string(p.world());
        out.layout = p.layout().str();
        out.env.push_back({env::kRank, out.rank, false});
        if (const std::optional<uint64_t> block = node_block(p, in.counts, *me)) {
            out.node_rank = std::to_string(*block);
            out.env.push_back({env::kNodeRankIsland, out.node_rank, false});
        }
        if (rank == 0) {
            const std::string straddling = straddle_summary(p);
            if (!straddling.empty()) out.warning = "layout " + out.layout + ": " + straddling;
        }
    } catch (const std::exception& e) {
        out = LayoutTaskRank{};
        out.problem = std::string("layout ") + request.layout + ": " + e.what();
    }
    return out;
}

TaskIslands task_islands(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                         const Getenv& env, const Node* node, std::optional<uint64_t> kept_rank) {
    StepNodes in = step_nodes(env);
    const uint32_t position = task_position(plan, task);

    TaskIslands out;
    out.placement = place_task(in.nodes, in.counts, map, node_name, position);
    const bool kept = kept_rank.has_value() && kept_rank.value_or(0) < out.placement.world;
    if (kept) out.placement.rank = kept_rank.value_or(0);
    const IslandPlacement& p = out.placement;
    for (auto& [name, value] : island_env(p)) out.set.push_back(EnvVar{name, value, false});
    const bool uniform = in.counts.runs().size() == 1 && in.counts.runs()[0].first > 0;
    out.node_rank = kept && uniform ? p.rank / in.counts.runs()[0].first
                                    : island_node_rank(in.nodes, in.counts, map, node_name, p, position);
    out.set.push_back(EnvVar{env::kNodeRankIsland, std::to_string(out.node_rank), false});

    out.verbose = " xisland=" + p.island + " island_rank=" + std::to_string(p.island_rank) + "/" +
                  std::to_string(p.island_size) + " rank=" + std::to_string(p.rank) + "/" + std::to_string(p.world) +
                  " islands=" + std::to_string(p.num_islands) + " (" +
                  (p.island_known ? island_source_name(p.source) : "no island information: alone") + ")";

    // Task-local evidence: reported when it contradicts the files.
    std::string pattern = env(env::kSlurmTopologyAddrPattern).value_or("");
    std::string leaf = leaf_from_topology_addr(env(env::kSlurmTopologyAddr).value_or(""), pattern);
    if (!leaf.empty() && p.island_known && p.source == IslandSource::TopologyTree && leaf != p.island)
        out.warning = std::string(env::kSlurmTopologyAddr) + " puts " + node_name + " under switch '" + leaf +
                      "' but the island files say '" + p.island + "' (is the topology.conf given to gputopo the one slurmctld uses?)";
    else if (!leaf.empty() && !p.island_known)
        out.warning = node_name + " is under switch '" + leaf + "' (SLURM_TOPOLOGY_ADDR) but no island file names it; " +
                      "it counts as an island of its own";
    if (node && out.warning.empty()) {
        std::string clique = nvml_clique_of(*node);
        if (!clique.empty() && !p.island_known)
            out.warning = node_name + " is in NVLink clique " + clique + " (NVML) but no island file names it; " +
                          "it counts as an island of its own";
    }
    return out;
}

namespace {

// SLURM_PROCID as a rank, nullopt when it is not a number of at most 9 digits.
std::optional<uint64_t> slurm_procid(const Getenv& env) {
    const std::string procid = env(env::kSlurmProcid).value_or("");
    if (procid.empty() || procid.size() > 9 || procid.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    return std::stoull(procid);
}

// The one decision: does island mode keep Slurm's ranks on this node, and why.
KeptRanks kept_ranks(const StepRanks& s, const Getenv& env) {
    if (!s.islands) return KeptRanks::None;
    if (env(env::kRankOrder).value_or("") == "slurm") return KeptRanks::RankOrderSlurm;
    if (!s.request.islands || !s.request.layout.layout.empty() || !s.slurm.topology || s.slurm.order.node_rank < 0)
        return KeptRanks::None;
    try {
        if (slurm_order_keeps_islands(env, s.slurm.order, *s.slurm.topology, *s.islands)) return KeptRanks::TopologyOrder;
    } catch (const std::exception&) {
    }
    return KeptRanks::None;
}

// Slurm's topology order kept: GPUTOPO_RANK = SLURM_PROCID, GPUTOPO_NODE_RANK
// the node's place in Slurm's order, so RANK, GROUP_RANK and PMI agree.
void keep_topology_order(const StepRanks& s, const Getenv& env, TaskRanks& t) {
    const std::optional<std::string> procid = env(env::kSlurmProcid);
    if (!procid) return;
    t.rank = *procid;
    t.node_rank = std::to_string(s.slurm.order.node_rank);
    for (EnvVar& v : t.set) {
        if (v.name == env::kRank) v.value = t.rank;
        if (v.name == env::kNodeRankIsland) v.value = t.node_rank;
    }
    t.verbose += " (Slurm's ranks)";
    t.slurm_ranks = true;
}

}  // namespace

SlurmOrder slurm_order(const Getenv& env, std::optional<uint64_t> first_rank, const std::string& slurm_dir) {
    SlurmOrder out;
    if (!first_rank) return out;
    // Slurm places tasks in topology order on 26.05+ builds (unless slurm.conf says
    // CR_NO_DIST_TOPO_BLOCK) and with TopologyParam=BlockAsNodeRank on 25.11+
    // (step/slurm_placement.hpp); else in node-list order, the topology unread.
    const Getenv process = [](const std::string& n) -> std::optional<std::string> {
        const char* v = std::getenv(n.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
    const bool by_topology = slurm_places_by_topology(process);
    if (by_topology) {
        try {
            out.topology = load_step_islands("", slurm_dir).map;
        } catch (const std::exception&) {
        }
    }
    out.order = step_node_order(env, *first_rank, out.topology ? &*out.topology : nullptr, by_topology);
    return out;
}

StepRanks step_ranks(const RanksRequest& request, const Getenv& env, SlurmOrder slurm) {
    StepRanks s;
    s.request = request;
    s.slurm = std::move(slurm);
    if (request.islands || !request.layout.layout.empty()) {
        try {  // islands= and/or Slurm's own topology (topo/fabric/slurm_islands.hpp)
            StepIslandMap m = load_step_islands(request.islands_conf, request.slurm_dir);
            // a layout places ranks even without islands (each node its own)
            if (m.sources != "none" || !request.layout.layout.empty()) s.islands = std::move(m.map);
            s.islands_from = m.sources;
        } catch (const std::exception& e) {
            s.problem = e.what();
        }
    }
    s.kept = kept_ranks(s, env);
    return s;
}

TaskRanks task_ranks(const StepRanks& s, const std::string& node_name, const Plan& plan, int task, const Getenv& env,
                     const Node* node) {
    TaskRanks t;
    t.problem = s.problem;
    if (!s.islands) return t;
    const bool layout = !s.request.layout.layout.empty();
    if (s.islands_from != "none" && (s.request.island_vars || !layout)) {
        try {
            std::optional<uint64_t> kept;
            if (s.kept == KeptRanks::RankOrderSlurm) kept = slurm_procid(env);
            TaskIslands ti = task_islands(*s.islands, node_name, plan, task, env, node, kept);
            t.set = std::move(ti.set);
            t.rank = std::to_string(ti.placement.rank);
            t.node_rank = std::to_string(ti.node_rank);
            t.island = ti.placement.island;
            t.verbose = std::move(ti.verbose);
            t.warning = std::move(ti.warning);
        } catch (const std::exception& e) {
            t.problem = e.what();
            return t;
        }
    }
    if (layout) {
        t.layout = layout_task_rank(*s.islands, node_name, plan, task, env, s.request.layout);
        t.set.erase(std::remove_if(t.set.begin(), t.set.end(),
                                   [](const EnvVar& v) { return v.name == env::kRank || v.name == env::kNodeRankIsland; }),
                    t.set.end());
        t.rank = t.layout.rank;
        t.node_rank = t.layout.node_rank;
        for (const EnvVar& v : t.layout.env) t.set.push_back(v);
        if (!t.layout.rank.empty()) t.verbose += " layout_rank=" + t.layout.rank + "/" + t.layout.world;
        return t;
    }
    if (s.kept == KeptRanks::TopologyOrder) keep_topology_order(s, env, t);
    return t;
}

}  // namespace gputopo::step
