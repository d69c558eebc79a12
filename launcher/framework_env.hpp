// The variables PyTorch, DeepSpeed, Lightning and friends read to form their
// process group, from what Slurm gives the task:
//   RANK = SLURM_PROCID, LOCAL_RANK = SLURM_LOCALID, WORLD_SIZE =
//   SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), LOCAL_WORLD_SIZE = this node's
//   entry of SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE),
//   MASTER_ADDR = the first node of SLURM_STEP_NODELIST (else
//   SLURM_JOB_NODELIST), MASTER_PORT = a port derived from the job and step
//   ids in [min, max], the same on every rank of the step.
// and the rest of what torchrun's agent gives each worker (pytorch
// torch/distributed/elastic/agent/server/local_elastic_agent.py,
// LocalElasticAgent._start_workers, worker_env), so code written for torchrun
// (Lightning's TorchElasticEnvironment, Composer's dist, torch's @record)
// finds it under srun too:
//   GROUP_RANK = NODE_RANK = SLURM_NODEID, GROUP_WORLD_SIZE = the step's node
//   count, ROLE_RANK = RANK, ROLE_WORLD_SIZE = WORLD_SIZE, ROLE_NAME =
//   "default" (torchrun's --role default), TORCHELASTIC_RESTART_COUNT =
//   SLURM_RESTART_COUNT (0 in a job never requeued), TORCHELASTIC_MAX_RESTARTS
//   = --max-restarts, TORCHELASTIC_RUN_ID = SLURM_JOB_ID,
//   TORCHELASTIC_ERROR_FILE = the rank's error file (launcher/error_file.hpp).
// Outside Slurm the same names are read from the normalised variables of
// launcher/rank_sources.hpp, and a master address/port the rank source names
// (PET_MASTER_ADDR, the JobSet's service) replaces the node-list derived one.
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
    int max_restarts = -1;          // TORCHELASTIC_MAX_RESTARTS; <0 not set
    std::string error_file;         // TORCHELASTIC_ERROR_FILE; "" not set
    std::string master_addr;        // from the rank source; "" derive from the node list
    std::string master_port;        // from the rank source; "" derive from the job id
};

// Missing Slurm variables leave the matching framework variable out (a run
// outside Slurm gets nothing). Throws ParseError for a malformed Slurm value.
std::vector<EnvVar> framework_env(const Getenv& getenv_fn, const FrameworkInputs& in);

// The torchrun-only part (GROUP_RANK ... TORCHELASTIC_ERROR_FILE), appended to `out`.
void torchrun_env(const Getenv& getenv_fn, const FrameworkInputs& in, std::vector<EnvVar>& out);

// JAX on Slurm restricts a process to local device SLURM_LOCALID (jax
// _src/clusters/slurm_cluster.py get_local_process_id; cluster.py
// auto_detect_unset_distributed_params: local_device_ids = [local id]). The
// task must see at least local id + 1 GPUs. `visible` is the
// CUDA_VISIBLE_DEVICES the program gets. "" when fine, else one line.
std::string jax_device_problem(int local_id, const std::string& visible);

// "2(x3),1" + node index 3 -> 1. Throws ParseError on malformed text or an
// index past the end.
int tasks_on_node(const std::string& tasks_per_node, int node_index);

// The first host of a Slurm hostlist expression ("gpu[007-009],x" -> "gpu007").
std::string first_host(const std::string& hostlist);

// Deterministic port for (job, step) in [lo, hi].
int master_port(unsigned long long job_id, unsigned long long step_id, int lo, int hi);

}  // namespace gputopo::launch
