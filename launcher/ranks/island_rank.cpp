#include "launcher/ranks/island_rank.hpp"

#include "step/framework_env.hpp"
#include "topo/core/env_names.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/fabric/step_islands.hpp"

namespace gputopo::launch {

namespace {

// --layout: RANK from the layout placement, islands as for --rank-order=island.
IslandRankOutcome layout_rank_outcome(const Options& opt, const std::string& node, int local_id,
                                      const Getenv& getenv_fn) {
    IslandRankOutcome out;
    try {
        StepIslandMap m = load_step_islands(opt.islands, slurm_config_dir(getenv_fn));
        Plan plan;  // tasks in local-id order (as for --rank-order=island without the plugin)
        plan.tasks.resize(static_cast<size_t>(local_id < 0 ? 1 : local_id + 1));
        for (size_t i = 0; i < plan.tasks.size(); ++i) plan.tasks[i].task = static_cast<int>(i);
        std::optional<ModelShape> model;
        if (!opt.model.empty()) model = parse_model_shape(opt.model);
        TaskLayoutRank r = task_layout_rank(m.map, node, plan, local_id, getenv_fn, ParallelLayout::parse(opt.layout),
                                            parse_nvlink_domain(opt.nvlink_domain), model ? &*model : nullptr);
        out.rank = std::to_string(r.rank);
        out.note = "RANK follows the layout placement " + r.layout + " (islands: " + m.sources + "): rank " + out.rank +
                   " of " + std::to_string(r.world) + "; `gputopo ranks --layout` shows the groups that straddle";
        if (!r.straddling.empty()) out.warning = "--layout " + r.layout + ": " + r.straddling;
    } catch (const std::exception& e) {
        out.note = std::string("--layout: ") + e.what() + "; RANK stays SLURM_PROCID";
    }
    return out;
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
        Plan plan;
        plan.tasks.resize(static_cast<size_t>(local_id < 0 ? 1 : local_id + 1));
        for (size_t i = 0; i < plan.tasks.size(); ++i) plan.tasks[i].task = static_cast<int>(i);
        TaskIslands ti = task_islands(m.map, node, plan, local_id, getenv_fn);
        out.env = ti.set;
        out.rank = std::to_string(ti.placement.rank);
        out.node_rank = std::to_string(ti.node_rank);
        out.note = "RANK follows the island order of " + m.sources + ": island " + ti.placement.island + ", rank " +
                   out.rank;
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
