// --rank-order=island: RANK follows GPUTOPO_RANK, the island-ordered rank
// (topo/fabric/rank_order.hpp). The SPANK plugin sets GPUTOPO_RANK for
// --gpu-topo=island steps when plugstack.conf has islands=; without the
// plugin the launcher computes the island variables itself from
// --islands FILE (gputopo.conf) and the step's SLURM_* variables, with tasks
// in local-id order within a node. Pure apart from reading the islands file.
#pragma once

#include <string>
#include <vector>

#include "launcher/options.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo::launch {

struct IslandRankOutcome {
    std::vector<EnvVar> env;  // GPUTOPO_ISLAND* and GPUTOPO_RANK when computed here (plugin absent)
    std::string rank;         // the value RANK should take, "" when unknown
    std::string note;         // why RANK stays SLURM_PROCID, or where the rank came from
};

// `node`: this node's Slurm name; `local_id`: SLURM_LOCALID.
IslandRankOutcome island_rank(const Options& opt, const std::string& node, int local_id, const Getenv& getenv_fn);

// Sets RANK in `wanted` (the framework variables) to `rank` (keeping
// user_wins: a RANK the user exported still wins).
void apply_island_rank(std::vector<EnvVar>& wanted, const std::string& rank);

}  // namespace gputopo::launch
