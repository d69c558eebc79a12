// Island and layout ranks for the tasks of a Slurm step: the one step-level
// call the SPANK plugin (user_init / task_init) and gputopo-launch
// (--rank-order=island, --layout) make. Pure apart from reading the island
// files (islands=/--islands, Slurm's topology.conf/topology.yaml).
//
// Once per node, step_ranks(): the island map, Slurm's rank order as this node
// sees it, and the one decision whether island mode keeps Slurm's ranks
// (RANK = SLURM_PROCID):
//   - GPUTOPO_RANK_ORDER=slurm (set by `gputopo run`, whose node slots are
//     already island by island and must keep their ranks when a spare takes a
//     slot): GPUTOPO_RANK stays SLURM_PROCID, GPUTOPO_NODE_RANK follows it;
//   - Slurm's own order already places the step's tasks island by island
//     (26.05+ builds, topology order: slurm_order_keeps_islands): GPUTOPO_RANK
//     stays SLURM_PROCID, GPUTOPO_NODE_RANK is the node's place in Slurm's order.
// A layout (tp=..,pp=..) places ranks itself: it replaces either.
//
// Per task, task_ranks(), in this order: the island variables (when the map
// has island sources), then the layout's rank (when asked: it replaces
// GPUTOPO_RANK and GPUTOPO_NODE_RANK), else Slurm's ranks when kept.
//
// Reads (through `env`): SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST),
// SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE), SLURM_PROCID,
// GPUTOPO_RANK_ORDER, and for a consistency check only SLURM_TOPOLOGY_ADDR /
// SLURM_TOPOLOGY_ADDR_PATTERN.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "step/slurm_rank_order.hpp"
#include "step/step_inputs.hpp"
#include "topo/core/model.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/fabric/rank_order.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo::step {

// ---- islands ----

struct TaskIslands {
    IslandPlacement placement;
    std::vector<EnvVar> set;   // GPUTOPO_ISLAND, _ISLAND_RANK, _ISLAND_SIZE, _NUM_ISLANDS, _RANK, _NODE_RANK (always ours)
    uint64_t node_rank = 0;    // GPUTOPO_NODE_RANK: this node's position in island order (GROUP_RANK, NODE_RANK)
    std::string verbose;       // " xisland=leaf1 island_rank=3/8 rank=11/16 islands=2 (topology.conf tree)"
    std::string warning;       // a disagreement worth one line to the user, "" when none
};

// The position of `node_name` among the step's nodes in island order (the
// GROUP_RANK torchrun would give it): arithmetic when every node has as many
// tasks, else one pass over the step (place_step).
uint64_t island_node_rank(const Hostlist& nodes, const TaskCounts& counts, const IslandMap& map,
                          const std::string& node_name, const IslandPlacement& p, uint32_t local_position);

// The values for local task `task` of `node_name`. `map` is the island map
// (load_islands()); `plan` gives the intra-node order; `node` (optional) its
// NVML fabric clique for the consistency check; `kept_rank`: Slurm's rank when
// island mode keeps it (GPUTOPO_RANK_ORDER=slurm, task_ranks). Throws
// ParseError/PlanError naming the variable or input that is wrong.
TaskIslands task_islands(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                         const Getenv& env, const Node* node = nullptr,
                         std::optional<uint64_t> kept_rank = std::nullopt);

// ---- a parallel layout's rank ----
// RANK from a parallel layout (topo/fabric/layout_placement.hpp) for one task.
// The task's position on its node comes from `plan` (the planner's order in the
// plugin, local-id order in the launcher alone). What it sets:
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
                                const Getenv& env, const LayoutRequest& request);

// A plan with `tasks` tasks in local-id order (no intra-node plan: gputopo-launch alone).
Plan local_id_order(int tasks);

// ---- the step-level call ----

// Slurm's rank order as this node sees it (step/slurm_rank_order.hpp): from the
// lowest rank this node holds (`first_rank`, nullopt: unknown), on 26.05+
// builds with Slurm's topology (read from `slurm_dir`) for its order.
struct SlurmOrder {
    SlurmNodeOrder order;
    std::optional<IslandMap> topology;  // Slurm's topology as islands (26.05+ builds), when read
};
SlurmOrder slurm_order(const Getenv& env, std::optional<uint64_t> first_rank, const std::string& slurm_dir);

enum class KeptRanks { None, RankOrderSlurm, TopologyOrder };

struct RanksRequest {
    bool islands = false;         // island order asked (--gpu-topo=island, --rank-order=island)
    std::string islands_conf;     // islands= / --islands (gputopo.conf), "" none
    std::string slurm_dir;        // Slurm's configuration directory (topology.conf/topology.yaml)
    LayoutRequest layout;         // layout.layout "" = none (a layout needs no island sources)
    bool island_vars = true;      // with a layout too, the island variables (the plugin; the launcher's --layout sets the rank alone)
};

struct StepRanks {
    RanksRequest request;
    std::optional<IslandMap> islands;  // the map, loaded once per node; unset: no island sources and no layout
    std::string islands_from;          // its sources ("none": a layout alone)
    std::string problem;               // why there is no map ("" fine)
    SlurmOrder slurm;                  // Slurm's rank order as this node sees it
    KeptRanks kept = KeptRanks::None;  // whether island mode keeps Slurm's ranks, and why
};

// Once per node. Never throws (a map that cannot be read is `problem`).
StepRanks step_ranks(const RanksRequest& request, const Getenv& env, SlurmOrder slurm);

struct TaskRanks {
    std::vector<EnvVar> set;       // GPUTOPO_ISLAND*, GPUTOPO_RANK, GPUTOPO_NODE_RANK
    std::string rank;              // GPUTOPO_RANK, "" none
    std::string node_rank;         // GPUTOPO_NODE_RANK, "" none
    std::string island;            // this task's island, "" none
    std::string verbose;           // for the verbose line (" xisland=...", " layout_rank=R/W", " (Slurm's ranks)")
    std::string warning;           // the island files disagree with the task's evidence (for one line), "" none
    std::string problem;           // islands: why there are no island variables, "" fine
    LayoutTaskRank layout;         // the layout's answer, when one was asked and the islands were fine
    bool slurm_ranks = false;      // Slurm's topology order kept (KeptRanks::TopologyOrder applied)
};

// Local task `task` of `node_name` (`plan`: the intra-node order; `node`: for
// the islands' consistency check, optional). Never throws: `problem` and
// `layout.problem` say what could not be done.
TaskRanks task_ranks(const StepRanks& step, const std::string& node_name, const Plan& plan, int task,
                     const Getenv& env, const Node* node = nullptr);

}  // namespace gputopo::step
