// Where a task's rank comes from when it is not (only) Slurm's: the launcher
// run by torchrun, by mpirun (Open MPI, also the Kubeflow MPI Operator), in a
// Kubeflow PyTorchJob / Trainer pod, or in an Indexed Job / JobSet pod. The
// result is a set of normalised SLURM-like variables that the rest of the
// launcher (binding, framework variables, events) reads as if Slurm had set
// them, laid over the real environment (with_rank_source()).
//
// Which source, first match wins:
//   torchrun   GROUP_RANK, RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE all
//              set (torchrun's agent sets them per worker: pytorch
//              torch/distributed/elastic/agent/server/local_elastic_agent.py,
//              _start_workers). Wins over SLURM_* because `srun torchrun ...`
//              gives the workers the agent's SLURM_PROCID.
//   openmpi    OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE, and
//              OMPI_COMM_WORLD_NODE_RANK when present (mpirun inside a Slurm
//              allocation leaves the orted's SLURM_PROCID behind, so Open MPI
//              wins over Slurm too). The MPI Operator's workers are mpirun's.
//   slurm      SLURM_PROCID set: nothing is overlaid.
//   pytorchjob PET_NNODES and PET_NODE_RANK (the Kubeflow training operator /
//              Trainer: torchrun's --nnodes, --node-rank as PET_* variables),
//              one process per pod (PET_NPROC_PER_NODE unset or 1; more needs
//              torchrun in the pod, which then is the source). Master from
//              PET_MASTER_ADDR / PET_MASTER_PORT (else MASTER_ADDR/PORT).
//   indexed-job JOB_COMPLETION_INDEX (set by Kubernetes in every pod of an
//              Indexed Job, so in every JobSet pod). JobSet itself sets no
//              variables; its pods carry the annotations
//              jobset.sigs.k8s.io/jobset-name, /replicatedjob-name and
//              /job-index, which the pod spec exports through the downward API
//              as JOBSET_NAME, REPLICATED_JOB_NAME and JOB_INDEX
//              (examples/kubernetes/jobset-one-island.yaml). Node rank =
//              JOB_INDEX * GPUTOPO_PODS_PER_JOB + JOB_COMPLETION_INDEX; world
//              GPUTOPO_NNODES (else GPUTOPO_PODS_PER_JOB, the one Job); one
//              process per pod; master MASTER_ADDR, else pod 0 of job 0
//              through the JobSet's headless service (pod host names are
//              <jobset>-<replicatedjob>-<job index>-<pod index>, subdomain
//              <jobset>): <jobset>-<replicatedjob>-0-0.<jobset>.
//   none       nothing found: rank 0 of 1.
// Pure; every malformed number is one ParseError naming the variable.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "launcher/options/options.hpp"
#include "topo/core/cpuset.hpp"

namespace gputopo::launch {

struct RankSource {
    std::string name = "none";                 // torchrun, openmpi, slurm, pytorchjob, indexed-job, none
    std::map<std::string, std::string> vars;   // normalised SLURM_* values to lay over the environment
    std::string master_addr;                   // "" when the source does not say
    std::string master_port;
    std::string note;                          // one line for --dry-run / --verbose
};

RankSource detect_rank_source(const Getenv& getenv_fn);

// Ranks and counts read from the environment (SLURM_PROCID, SLURM_LOCALID,
// SLURM_NODEID, SLURM_STEP_NUM_TASKS, RANK, OMPI_COMM_WORLD_SIZE, ...): no
// world is bigger than kMaxWorld, no node runs more than kMaxLocalTasks tasks
// (the step-GPU exchange and the binding size memory by it).
inline constexpr long long kMaxWorld = 99999999;  // below 10^8: a larger value is a typo
inline constexpr int kMaxLocalTasks = 4096;
// The variable `name` as a number from 0 to `max` (decimal digits only);
// `fallback` when unset or empty. Throws ParseError naming the variable, its
// value and the range expected.
long long env_number(const Getenv& getenv_fn, const char* name, long long max, long long fallback);

// `getenv_fn` with the source's variables in front.
Getenv with_rank_source(const Getenv& getenv_fn, const RankSource& src);

// The launcher's view: the source, plus outside Slurm the node's GPUs when no
// GPU list is in the environment (launcher/ranks/pod.hpp: NVIDIA_VISIBLE_DEVICES
// or /proc/driver/nvidia/gpus, as SLURM_STEP_GPUS) and the cgroup cpuset.
// A malformed variable gives one line on stderr and rank 0 of 1.
struct RankSourceView {
    RankSource source;
    Getenv getenv;
    std::string gpus_from;          // where the GPU list came from ("" Slurm or CUDA_VISIBLE_DEVICES)
    std::optional<CpuSet> cpuset;   // outside Slurm: the cgroup cpuset
};
RankSourceView rank_source_view(const Options& opt, const Getenv& getenv_fn);

}  // namespace gputopo::launch
