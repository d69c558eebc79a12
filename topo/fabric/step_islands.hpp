// Islands across nodes for one task of a Slurm step: the glue between what
// Slurm puts in a task's environment and rank_order. Used by the SPANK plugin
// (task_init) and the launcher; pure apart from reading the island file.
//
// Reads (through `env`): SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST),
// SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE), and for a consistency
// check only SLURM_TOPOLOGY_ADDR / SLURM_TOPOLOGY_ADDR_PATTERN.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "topo/fabric/island_map.hpp"
#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"
#include "topo/fabric/rank_order.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo {

using EnvReader = std::function<std::optional<std::string>(const std::string&)>;

struct TaskIslands {
    IslandPlacement placement;
    std::vector<EnvVar> set;   // GPUTOPO_ISLAND, _ISLAND_RANK, _ISLAND_SIZE, _NUM_ISLANDS, _RANK, _NODE_RANK (always ours)
    uint64_t node_rank = 0;    // GPUTOPO_NODE_RANK: this node's position in island order (GROUP_RANK, NODE_RANK)
    std::string verbose;       // " xisland=leaf1 island_rank=3/8 rank=11/16 islands=2 (topology.conf tree)"
    std::string warning;       // a disagreement worth one line to the user, "" when none
};

// The values for local task `task` of `node_name`. `map` is the island map
// (load_islands()); `plan` gives the intra-node order; `node` (optional) its
// NVML fabric clique for the consistency check. Throws ParseError/PlanError
// naming the variable or input that is wrong.
// The position of `node_name` among the step's nodes in island order (the
// GROUP_RANK torchrun would give it): arithmetic when every node has as many
// tasks, else one pass over the step (place_step).
uint64_t island_node_rank(const Hostlist& nodes, const TaskCounts& counts, const IslandMap& map,
                          const std::string& node_name, const IslandPlacement& p, uint32_t local_position);

TaskIslands task_islands(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                         const EnvReader& env, const Node* node = nullptr);

// The RANK of local task `task` of `node_name` under a parallel layout
// (topo/fabric/layout_placement.hpp), from the same Slurm variables as
// task_islands() and the intra-node order of `plan`: the call the plugin and
// the launcher make for --gpu-topo=island,layout=... / --layout. Throws
// ParseError/PlanError naming the variable or input that is wrong.
struct TaskLayoutRank {
    uint64_t rank = 0;
    uint64_t world = 0;
    std::string layout;  // the resolved layout, ParallelLayout::str()
    std::string straddling;  // for the task of rank 0 only (once per step): straddle_summary(), "" when none
    // The node's position when its ranks are one aligned block (ranks k*n ..
    // k*n+n-1, n tasks on every node of the step): k. Else unset.
    std::optional<uint64_t> node_block;
};
// `model` (optional): the bytes that choose between stages island by island
// and whole pipelines together (place_layout's weights).
TaskLayoutRank task_layout_rank(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                                const EnvReader& env, const ParallelLayout& layout, const FabricShape& shape,
                                const ModelShape* model = nullptr);

}  // namespace gputopo
