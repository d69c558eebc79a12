// The variables PyTorch, DeepSpeed, Lightning and friends read to form their
// process group, from what Slurm gives the task:
//   RANK = SLURM_PROCID, LOCAL_RANK = SLURM_LOCALID, WORLD_SIZE =
//   SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), LOCAL_WORLD_SIZE = this node's
//   entry of SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE),
//   MASTER_ADDR = the first node of SLURM_STEP_NODELIST (else
//   SLURM_JOB_NODELIST), MASTER_PORT = a port derived from the job and step
//   ids in [min, max], the same on every rank of the step.
// A value the user already set wins (EnvVar::user_wins). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/options.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo::launch {

struct FrameworkInputs {
    int master_port_min = 20000;
    int master_port_max = 29999;
};

// Missing Slurm variables leave the matching framework variable out (a run
// outside Slurm gets nothing). Throws ParseError for a malformed Slurm value.
std::vector<EnvVar> framework_env(const Getenv& getenv_fn, const FrameworkInputs& in);

// "2(x3),1" + node index 3 -> 1. Throws ParseError on malformed text or an
// index past the end.
int tasks_on_node(const std::string& tasks_per_node, int node_index);

// The first host of a Slurm hostlist expression ("gpu[007-009],x" -> "gpu007").
std::string first_host(const std::string& hostlist);

// Deterministic port for (job, step) in [lo, hi].
int master_port(unsigned long long job_id, unsigned long long step_id, int lo, int hi);

}  // namespace gputopo::launch
