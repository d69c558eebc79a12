// --rank-order=island: RANK follows GPUTOPO_RANK, the island-ordered rank
// (topo/fabric/rank_order.hpp). The SPANK plugin sets GPUTOPO_RANK for
// --gpu-topo=island steps when plugstack.conf has islands=; without the
// plugin the launcher computes the island variables itself from
// --islands FILE (gputopo.conf) and the step's SLURM_* variables, with tasks
// in local-id order within a node. Pure apart from reading the islands file.
#pragma once

#include <string>
#include <vector>

#include "launcher/options/options.hpp"
#include "topo/core/env_var.hpp"

namespace gputopo::launch {

struct IslandRankOutcome {
    std::vector<EnvVar> env;  // GPUTOPO_ISLAND* and GPUTOPO_RANK when computed here (plugin absent)
    std::string rank;         // the value RANK should take, "" when unknown
    std::string node_rank;    // the value GROUP_RANK / NODE_RANK should take, "" when unknown
    std::string note;         // why RANK stays SLURM_PROCID, or where the rank came from
    std::string warning;      // --layout: groups that straddle (said by the task of rank 0 only), "" none
    bool slurm_ranks = false; // Slurm's order is island by island already: rank = SLURM_PROCID (issue 32)
};

// `node`: this node's Slurm name; `local_id`: SLURM_LOCALID.
IslandRankOutcome island_rank(const Options& opt, const std::string& node, int local_id, const Getenv& getenv_fn);

// --island-procid: the program's SLURM_PROCID becomes the island rank (it
// replaces Slurm's value, which stays in GPUTOPO_SLURM_PROCID), so code that
// computes its rank from SLURM_PROCID (JAX's SlurmCluster, Lightning's
// SLURMEnvironment, Megatron-Bridge) follows island order. SLURM_LOCALID
// stays: island order keeps a node's tasks together and the GPU at position
// LOCAL_RANK is the task's own. What it changes: PMI/PMIx ranks (MPI) stay
// Slurm's; srun --label and --output=%t name Slurm's task id; srun
// --multi-prog chose the program by Slurm's task id. Empty when `rank` is.
std::vector<EnvVar> island_procid_env(const std::string& rank, const std::string& slurm_procid);

// Sets RANK and ROLE_RANK in `wanted` (the framework variables) to `rank`,
// GROUP_RANK and NODE_RANK to `node_rank` (keeping user_wins: a value the
// user exported still wins); step::apply_island_order.
void apply_island_rank(std::vector<EnvVar>& wanted, const std::string& rank, const std::string& node_rank = "");

}  // namespace gputopo::launch
