// Island-ordered global ranks, computed by every task on its own from what
// Slurm gives all tasks alike (the step's node list and tasks per node) and
// the island map: no communication, the same answer everywhere.
//
// The order:
//  - islands one after another, in the order of their first node in the
//    step's node list (Slurm's node order, so a step that already sits island
//    by island keeps Slurm's own rank order);
//  - nodes within an island in node-list order;
//  - tasks within a node in the planner's intra-node island order
//    (local_positions(): by intra-node island, then local task id).
// A node that no island source names is an island of its own, named after the
// node (island_known == false): ranks never pretend bandwidth that is unknown.
//
// Cost for one task: O(n) time over the compressed node list with one island
// lookup per node (hash + binary search), O(islands) memory, no host name
// strings. bench/bench_rank_order.cpp measures it at 1k-100k nodes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topo/fabric/hostlist.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/plan/planner.hpp"

namespace gputopo {

// SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE: "4(x3),2" = 4,4,4,2.
class TaskCounts {
public:
    // Throws ParseError naming the text (expected e.g. '4(x3),2').
    static TaskCounts parse(std::string_view text);
    static TaskCounts uniform(uint64_t nodes, uint32_t tasks_per_node);

    uint64_t nodes() const { return nodes_; }
    uint64_t tasks() const { return tasks_; }
    uint32_t at(uint64_t node) const;  // tasks on node `node` (0-based); throws std::out_of_range
    const std::vector<std::pair<uint32_t, uint64_t>>& runs() const { return runs_; }  // (tasks, repeat)

private:
    std::vector<std::pair<uint32_t, uint64_t>> runs_;
    uint64_t nodes_ = 0;
    uint64_t tasks_ = 0;
};

// What one task gets (the GPUTOPO_ISLAND* and GPUTOPO_RANK values).
struct IslandPlacement {
    std::string island;         // GPUTOPO_ISLAND: the island's name (the node's name when unknown)
    bool island_known = false;  // a source names the node's island
    IslandSource source = IslandSource::GputopoConf;  // which one (when known)
    uint64_t island_index = 0;  // 0-based position of the island in the step's order
    uint64_t island_rank = 0;   // GPUTOPO_ISLAND_RANK
    uint64_t island_size = 0;   // GPUTOPO_ISLAND_SIZE: tasks of the step in the island
    uint64_t island_nodes = 0;  // nodes of the step in the island
    uint64_t num_islands = 0;   // GPUTOPO_NUM_ISLANDS
    uint64_t rank = 0;          // GPUTOPO_RANK
    uint64_t world = 0;         // tasks in the step
};

// The values for local task at `local_position` (see local_positions()) on
// `node`. Throws PlanError when the node is not in the node list, the task
// counts do not cover the node list, or local_position is not below the
// node's task count.
IslandPlacement place_task(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                           std::string_view node, uint32_t local_position);

// One row per node of the step, in rank order (for gputopo plan and verbose).
struct NodePlacement {
    uint64_t node_index = 0;    // position in the step's node list
    std::string node;
    std::string island;
    bool island_known = false;
    uint64_t island_index = 0;
    uint32_t tasks = 0;
    uint64_t first_rank = 0;         // GPUTOPO_RANK of its first task
    uint64_t first_island_rank = 0;  // GPUTOPO_ISLAND_RANK of its first task
    uint64_t island_size = 0;
};
std::vector<NodePlacement> place_step(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map);

// Position of each local task in the intra-node order: by the planner's
// intra-node island (tasks without one last), then by local task id.
std::vector<uint32_t> local_positions(const Plan& plan);

// The environment values, names from topo/core/env_names.hpp, in a fixed order:
// GPUTOPO_ISLAND, GPUTOPO_ISLAND_RANK, GPUTOPO_ISLAND_SIZE, GPUTOPO_NUM_ISLANDS, GPUTOPO_RANK.
std::vector<std::pair<std::string, std::string>> island_env(const IslandPlacement& p);

}  // namespace gputopo
