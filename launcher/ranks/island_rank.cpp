#include "launcher/ranks/island_rank.hpp"

#include "step/framework_env.hpp"
#include "step/slurm_rank_order.hpp"
#include "step/task_ranks.hpp"
#include "topo/core/env_names.hpp"
#include "topo/fabric/slurm_islands.hpp"

namespace gputopo::launch {

namespace {

// --layout: RANK (and GPUTOPO_RANK, GROUP_RANK where the node holds one block
// of ranks) from the layout placement, the plugin's path.
IslandRankOutcome layout_outcome(const Options& opt, const step::StepRanks& s, const step::TaskRanks& t) {
    IslandRankOutcome out;
    const step::LayoutTaskRank& r = t.layout;
    if (!s.problem.empty() || r.rank.empty()) {
        out.note = "--" + (s.problem.empty() ? r.problem : "layout " + opt.layout + ": " + s.problem) +
                   "; RANK stays SLURM_PROCID";
        return out;
    }
    out.env = r.env;
    out.rank = r.rank;
    out.node_rank = r.node_rank;
    out.note = "RANK follows the layout placement " + r.layout + " (islands: " + s.islands_from + "): rank " + out.rank +
               " of " + r.world + "; `gputopo ranks --layout` shows the groups that straddle";
    if (!r.warning.empty()) out.warning = "--" + r.warning;
    return out;
}

// --rank-order=island: the island order, or Slurm's ranks where it already
// places the tasks island by island (step/task_ranks.hpp decides, as for the plugin).
IslandRankOutcome island_outcome(const step::StepRanks& s, const step::TaskRanks& t) {
    IslandRankOutcome out;
    const std::string problem = s.problem.empty() ? t.problem : s.problem;
    if (!problem.empty()) {
        out.note = "--rank-order=island: " + problem + "; RANK stays SLURM_PROCID";
        return out;
    }
    if (!s.islands) {
        out.note = "--rank-order=island: GPUTOPO_RANK is not set (run the step with --gpu-topo=island, give "
                   "--islands FILE, or a Slurm topology.conf/topology.yaml); RANK stays SLURM_PROCID";
        return out;
    }
    out.env = t.set;
    out.rank = t.rank;
    out.node_rank = t.node_rank;
    out.note = "RANK follows the island order of " + s.islands_from + ": island " + t.island + ", rank " + out.rank;
    if (t.slurm_ranks) {
        out.slurm_ranks = true;
        out.note = "Slurm already places this step's tasks island by island (topology order): RANK stays SLURM_PROCID";
    }
    return out;
}

}  // namespace

IslandRankOutcome island_rank(const Options& opt, const std::string& node, int local_id, const Getenv& getenv_fn) {
    const bool layout = !opt.layout.empty();
    IslandRankOutcome out;
    if (!layout && opt.rank_order != "island") return out;
    if (auto r = getenv_fn(env::kRank); !layout && r && !r->empty()) {
        out.rank = *r;
        out.node_rank = getenv_fn(env::kNodeRankIsland).value_or("");
        out.note = "RANK follows GPUTOPO_RANK (island order, set by the plugin)";
        return out;
    }
    // --islands and/or Slurm's own topology (SLURM_CONF's directory), as the plugin.
    step::RanksRequest req;
    req.islands = !layout;
    req.islands_conf = opt.islands;
    req.slurm_dir = slurm_config_dir(getenv_fn);
    if (layout) req.layout = {opt.layout, opt.nvlink_domain, opt.model};
    req.island_vars = false;  // --layout sets the rank alone
    const step::StepRanks s = step::step_ranks(
        req, getenv_fn, layout ? step::SlurmOrder{} : step::slurm_order(getenv_fn, step::node_first_rank(getenv_fn), req.slurm_dir));
    // No intra-node plan here: tasks keep local-id order (local_positions),
    // enough of them to cover this task.
    const step::TaskRanks t = step::task_ranks(s, node, step::local_id_order(local_id + 1), local_id, getenv_fn);
    return layout ? layout_outcome(opt, s, t) : island_outcome(s, t);
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
