#include "topo/fabric/step_islands.hpp"

#include <algorithm>

#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"

namespace gputopo {

namespace {

std::string first_of(const EnvReader& env, const char* a, const char* b, std::string* which) {
    for (const char* n : {a, b}) {
        if (auto v = env(n); v && !v->empty()) {
            *which = n;
            return *v;
        }
    }
    throw PlanError(std::string("neither ") + a + " nor " + b +
                    " is set (expected Slurm to give the step's nodes and tasks per node)");
}

struct StepInputs {
    Hostlist nodes;
    TaskCounts counts;
};

StepInputs step_inputs(const EnvReader& env) {
    std::string nodes_var, counts_var;
    std::string nodelist = first_of(env, env::kSlurmStepNodelist, env::kSlurmJobNodelist, &nodes_var);
    std::string counts_text = first_of(env, env::kSlurmStepTasksPerNode, env::kSlurmTasksPerNode, &counts_var);
    StepInputs in;
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

// GPUTOPO_RANK_ORDER=slurm (set by `gputopo run`, whose node slots are already
// island by island and must keep their ranks when a spare takes a slot): the
// rank stays SLURM_PROCID. nullopt otherwise, or when SLURM_PROCID is not a rank
// of the step.
std::optional<uint64_t> slurm_rank_kept(const EnvReader& env, uint64_t world) {
    if (env(env::kRankOrder).value_or("") != "slurm") return std::nullopt;
    const std::string procid = env(env::kSlurmProcid).value_or("");
    if (procid.empty() || procid.size() > 9 || procid.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    const uint64_t r = std::stoull(procid);
    if (r >= world) return std::nullopt;
    return r;
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

TaskLayoutRank task_layout_rank(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                                const EnvReader& env, const ParallelLayout& layout, const FabricShape& shape,
                                const ModelShape* model) {
    StepInputs in = step_inputs(env);
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
    TaskLayoutRank out;
    out.rank = p.rank(*me, position);
    out.world = p.world();
    out.layout = p.layout().str();
    if (out.rank == 0) out.straddling = straddle_summary(p);
    out.node_block = node_block(p, in.counts, *me);
    return out;
}

TaskIslands task_islands(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                         const EnvReader& env, const Node* node) {
    StepInputs in = step_inputs(env);
    const uint32_t position = task_position(plan, task);

    TaskIslands out;
    out.placement = place_task(in.nodes, in.counts, map, node_name, position);
    const std::optional<uint64_t> kept = slurm_rank_kept(env, out.placement.world);
    if (kept) out.placement.rank = *kept;
    const IslandPlacement& p = out.placement;
    for (auto& [name, value] : island_env(p)) out.set.push_back(EnvVar{name, value, false});
    const bool uniform = in.counts.runs().size() == 1 && in.counts.runs()[0].first > 0;
    out.node_rank = kept && uniform ? *kept / in.counts.runs()[0].first
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

}  // namespace gputopo
