// The nodes of a `gputopo run` job: which run the step (slots, in rank
// order), which wait as spares, which are out for the rest of the job, and
// what a failure leads to. Pure: tested on island maps built in memory.
//
// Slots: slot i holds the ranks i*T .. i*T+T-1 (T tasks per node), so a
// replacement that takes a failed node's slot takes over its ranks and every
// other rank keeps its node.
// Spares: chosen one per island in turn (largest island first, each island's
// last node), so a failure finds a spare under its own leaf switch / rack as
// often as the spare count allows.
// Replacement: a spare in the failed node's island, else the nearest by
// island order (|island id difference|, islands as the map numbers them;
// spares of no known island last), ties by the spare list's order.
#pragma once

#include <string>
#include <vector>

#include "launcher/failure/classify.hpp"
#include "topo/fabric/island_map.hpp"

namespace gputopo::launch::job {

struct NodePool {
    std::vector<std::string> slots;     // the step's nodes, slot order = rank order
    std::vector<std::string> spares;    // idle, in the order they are offered
    std::vector<std::string> excluded;  // failed, out for the rest of the job
};

// The allocation's nodes (Slurm's order) split into N - spares slots (grouped
// island by island, each island's in Slurm's order) and `spares` spares. Throws std::invalid_argument (a message naming --spares)
// when spares >= nodes. `spares` kSparesAuto (--spares auto): the spares inside every
// island that run/rack_spares.hpp's rule keeps.
NodePool split_allocation(const std::vector<std::string>& nodes, int spares, const IslandMap& islands);

// Index into pool.spares of the replacement for `failed`; -1 when none.
int pick_replacement(const NodePool& pool, const std::string& failed, const IslandMap& islands);

enum class RestartAction {
    Stop,      // the job ends with the step's status (success, user error, limit, budget spent)
    Relaunch,  // the same nodes again (no node to blame)
    Replace,   // the failed node's slot goes to a spare
    Shrink,    // no spare: the failed node's slot is dropped (--min-nodes allows it)
    Requeue,   // no spare, no shrink: Slurm requeue with the failed node excluded
};
const char* restart_action_name(RestartAction a);  // "stop", "relaunch", ...

struct RestartPolicy {
    int max_restarts = 3;  // in-job restarts
    int min_nodes = 0;     // 0: as many as the first step had (no shrinking)
};

struct RestartDecision {
    RestartAction action = RestartAction::Stop;
    std::string failed_node;   // "" none known
    std::string replacement;   // Replace
    bool same_island = false;  // Replace: the replacement shares the failed node's island
    std::string reason;        // one line for the user and the log
};

// Classes that end the job without a restart: success, user_error, timeout, preemption.
bool restartable(FailureClass c);

// Pure: what to do after a step ended with `c`, blamed on `failed_node`
// ("" unknown), after `restarts` in-job restarts.
RestartDecision decide_restart(const NodePool& pool, const Classification& c, const std::string& failed_node,
                               int restarts, const RestartPolicy& policy, const IslandMap& islands);

// Applies a Replace or Shrink decision to the pool (Relaunch, Stop and
// Requeue leave it as it is, apart from excluding the failed node on Requeue).
void apply_decision(NodePool& pool, const RestartDecision& d);

// The step's -w list for arbitrary distribution: every slot's node repeated
// once per task, in slot order ("n1,n1,n3,n3").
std::string task_nodelist(const std::vector<std::string>& slots, int tasks_per_node);

}  // namespace gputopo::launch::job
