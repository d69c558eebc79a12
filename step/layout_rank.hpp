// RANK from a parallel layout (topo/fabric/layout_placement.hpp) for one task:
// the one path the SPANK plugin (--gpu-topo=island,tp=..,pp=.., task_init) and
// gputopo-launch (--layout) take. The task's position on its node comes from
// `plan` (the planner's order in the plugin, local-id order in the launcher
// alone), the step's nodes and tasks from the Slurm variables step_islands
// reads. What it sets:
//   GPUTOPO_RANK       the layout rank (RANK and ROLE_RANK follow it,
//                      step::apply_island_order)
//   GPUTOPO_NODE_RANK  rank / tasks-per-node when this node holds exactly one
//                      aligned block of ranks and every node has as many tasks
//                      (GROUP_RANK and NODE_RANK follow it, so RANK = GROUP_RANK
//                      x LOCAL_WORLD_SIZE + local offset holds as under
//                      torchrun); otherwise not set (GROUP_RANK stays
//                      SLURM_NODEID) and the note says so.
// Never throws: a layout that does not fit the step leaves `rank` empty and
// `problem` says why (RANK stays SLURM_PROCID).
#pragma once

#include <string>
#include <vector>

#include "step/step_inputs.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo::step {

struct LayoutRequest {
    std::string layout;                  // "tp=8,pp=4[,cp=..,ep=..,order=..]"
    std::string nvlink_domain = "node";  // parse_nvlink_domain's text
    std::string model;                   // parse_model_shape's text, "" none
};

struct LayoutTaskRank {
    std::vector<EnvVar> env;  // GPUTOPO_RANK, and GPUTOPO_NODE_RANK when the node holds one block
    std::string rank;         // "" when the layout could not be placed
    std::string node_rank;    // "" when GROUP_RANK stays SLURM_NODEID
    std::string world;
    std::string layout;       // resolved, ParallelLayout::str()
    std::string warning;      // groups that straddle NVLink domains (the task of rank 0 only), "" none
    std::string problem;      // why there is no rank, "" when placed
};

LayoutTaskRank layout_task_rank(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                                const Getenv& getenv_fn, const LayoutRequest& request);

// A plan with `tasks` tasks in local-id order (no intra-node plan: gputopo-launch alone).
Plan local_id_order(int tasks);

}  // namespace gputopo::step
