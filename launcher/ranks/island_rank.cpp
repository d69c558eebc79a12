#include "launcher/ranks/island_rank.hpp"

#include "step/framework_env.hpp"
#include "step/layout_rank.hpp"
#include "step/slurm_rank_order.hpp"
#include "topo/core/env_names.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/fabric/step_islands.hpp"

namespace gputopo::launch {

namespace {

// --layout: RANK (and GPUTOPO_RANK, GROUP_RANK where the node holds one block
// of ranks) from the layout placement, the plugin's path (step/layout_rank.hpp).
IslandRankOutcome layout_rank_outcome(const Options& opt, const std::string& node, int local_id,
                                      const Getenv& getenv_fn) {
    IslandRankOutcome out;
    std::string sources;
    step::LayoutTaskRank r;
    try {
        StepIslandMap m = load_step_islands(opt.islands, slurm_config_dir(getenv_fn));
        sources = m.sources;
        // tasks in local-id order (as for --rank-order=island without the plugin)
        r = step::layout_task_rank(m.map, node, step::local_id_order(local_id + 1), local_id, getenv_fn,
                                   {opt.layout, opt.nvlink_domain, opt.model});
    } catch (const std::exception& e) {  // the islands file
        r.problem = "layout " + opt.layout + ": " + e.what();
    }
    if (r.rank.empty()) {
        out.note = "--" + r.problem + "; RANK stays SLURM_PROCID";
        return out;
    }
    out.env = r.env;
    out.rank = r.rank;
    out.node_rank = r.node_rank;
    out.note = "RANK follows the layout placement " + r.layout + " (islands: " + sources + "): rank " + out.rank +
               " of " + r.world + "; `gputopo ranks --layout` shows the groups that straddle";
    if (!r.warning.empty()) out.warning = "--" + r.warning;
    return out;
}

// Slurm already places the tasks island by island (26.05 builds: this task's
// node follows Slurm's topology order, in which each island is one run of
// nodes; step/slurm_rank_order.hpp): the rank stays SLURM_PROCID, the node rank
// its place in Slurm's order, as the plugin does.
void keep_slurm_ranks(const Getenv& getenv_fn, const IslandMap& islands, IslandRankOutcome& out) {
    if (!step::built_topology_order()) return;
    const std::optional<uint64_t> first_rank = step::node_first_rank(getenv_fn);
    if (!first_rank) return;
    const IslandMap topology = load_step_islands("", slurm_config_dir(getenv_fn)).map;
    const step::SlurmNodeOrder o = step::step_node_order(getenv_fn, *first_rank, &topology, true);
    if (o.node_rank < 0 || !step::slurm_order_keeps_islands(getenv_fn, o, topology, islands)) return;
    out.rank = getenv_fn(env::kSlurmProcid).value_or("");
    out.node_rank = std::to_string(o.node_rank);
    out.slurm_ranks = true;
    for (EnvVar& v : out.env) {
        if (v.name == env::kRank) v.value = out.rank;
        if (v.name == env::kNodeRankIsland) v.value = out.node_rank;
    }
    out.note = "Slurm already places this step's tasks island by island (topology order): RANK stays SLURM_PROCID";
}

}  // namespace

IslandRankOutcome island_rank(const Options& opt, const std::string& node, int local_id, const Getenv& getenv_fn) {
    if (!opt.layout.empty()) return layout_rank_outcome(opt, node, local_id, getenv_fn);
    IslandRankOutcome out;
    if (opt.rank_order != "island") return out;
    if (auto r = getenv_fn(env::kRank); r && !r->empty()) {
        out.rank = *r;
        out.node_rank = getenv_fn(env::kNodeRankIsland).value_or("");
        out.note = "RANK follows GPUTOPO_RANK (island order, set by the plugin)";
        return out;
    }
    try {
        // --islands and/or Slurm's own topology (SLURM_CONF's directory), as the plugin.
        StepIslandMap m = load_step_islands(opt.islands, slurm_config_dir(getenv_fn));
        if (m.sources == "none") {
            out.note = "--rank-order=island: GPUTOPO_RANK is not set (run the step with --gpu-topo=island, give "
                       "--islands FILE, or a Slurm topology.conf/topology.yaml); RANK stays SLURM_PROCID";
            return out;
        }
        // No intra-node plan here: tasks without an intra-node island keep
        // local-id order (local_positions), enough of them to cover this task.
        TaskIslands ti = task_islands(m.map, node, step::local_id_order(local_id + 1), local_id, getenv_fn);
        out.env = ti.set;
        out.rank = std::to_string(ti.placement.rank);
        out.node_rank = std::to_string(ti.node_rank);
        out.note = "RANK follows the island order of " + m.sources + ": island " + ti.placement.island + ", rank " +
                   out.rank;
        keep_slurm_ranks(getenv_fn, m.map, out);
    } catch (const std::exception& e) {
        out.note = std::string("--rank-order=island: ") + e.what() + "; RANK stays SLURM_PROCID";
    }
    return out;
}

std::vector<EnvVar> island_procid_env(const std::string& rank, const std::string& slurm_procid) {
    if (rank.empty()) return {};
    return {{env::kSlurmProcid, rank, false}, {env::kOriginalSlurmProcid, slurm_procid, false}};
}

void apply_island_rank(std::vector<EnvVar>& wanted, const std::string& rank, const std::string& node_rank) {
    if (rank.empty()) return;
    step::apply_island_order(wanted, rank, node_rank);
}

}  // namespace gputopo::launch
