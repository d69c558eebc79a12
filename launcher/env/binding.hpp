// gputopo-launch's front end to the one step binding (step/step_binding.hpp):
// when the SPANK plugin did not bind the task (GPUTOPO_MODE unset), the
// launcher builds the same StepSetup the plugin's user_init builds, from the
// task's environment, and takes the same per-task action. It re-implements
// no part of the binding. Any failure gives one note and an unbound task.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/options/options.hpp"
#include "launcher/env/node_read.hpp"
#include "launcher/env/step_gpus.hpp"
#include "step/step_binding.hpp"
#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"
#include "topo/sources/nic_policy.hpp"

namespace gputopo::launch {

// Where this task sits on its node, from Slurm's task variables. Read once per
// rank (launcher/run.cpp RankInfo) and passed down to the binding.
struct TaskPlace {
    int local_id = 0;          // SLURM_LOCALID
    int local_tasks = 1;       // from SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE) and SLURM_NODEID
    std::string node_name;     // SLURMD_NODENAME (slurmstepd sets it per task), else the step's node list, else host
    std::string problem;       // why the variables could not be read (read_task_place); "" when read
};
// Throws ParseError for a variable that is not a non-negative number.
TaskPlace task_place(const Getenv& task_env, const std::string& host);
// task_place(), never throwing: a malformed variable gives the defaults and `problem`
// (the binding then fails with it, compute_binding).
TaskPlace read_task_place(const Getenv& task_env, const std::string& host);

// The step's environment as the plugin's user_init sees it, from this task's
// (narrowed) environment and the step's GPUs on the node: SLURM_STEP_GPUS is
// the step's set, and CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES follow the
// numbering Slurm used for this task (GPU indices, or positions in the step's
// set); every other variable is the task's.
step::Getenv step_environment(const Getenv& task_env, const std::vector<int>& step_gpus);

// Why the launcher does not bind this task ("" when it does): the plugin
// already did (GPUTOPO_MODE set), --gpu-topo none, or neither a job step nor
// another rank source (`ranked`: torchrun, Open MPI, a pod placed the task,
// launcher/ranks/rank_sources.hpp). A plain run outside Slurm, or a batch script,
// stays unbound as under the plugin.
std::string binding_skipped(const step::Options& opt, const Getenv& task_env, bool ranked = false);

// Outside Slurm (no SLURM_JOB_ID) with no GPU list anywhere: `task_env` with
// SLURM_STEP_GPUS = every GPU of `node`; otherwise `task_env` itself.
Getenv with_node_gpus(const Getenv& task_env, const Node& node);

// A process a rank source started inside one Slurm task (`ranked`, with the
// plugin's whole-task binding or torchrun's workers sharing srun's task): what
// that task holds, not what the parent made of it.
//  - Under torchrun (GROUP_RANK and LOCAL_WORLD_SIZE set) SLURM_CPUS_PER_TASK
//    is the Slurm task's, shared by the node's `local_tasks` workers: each
//    plans its share (at least 1).
//  - Where the plugin bound the whole task (GPUTOPO_MODE, GPUTOPO_CPUS): the
//    task's CPUs are GPUTOPO_CPUS, not this process's affinity, which the
//    parent may have narrowed (torch's libgomp pins torchrun to the first
//    OMP_PLACES place when OMP_PROC_BIND is set, and every worker inherits
//    that); and the OMP_* values the plugin set for the whole task (what
//    topo/plan/omp_env gives for GPUTOPO_CPUS) are gputopo's, not the user's:
//    hidden, so the worker gets its own.
struct WorkerView {
    Getenv env;
    std::optional<CpuSet> task_cpus;  // the plugin's whole-task CPUs; nullopt: the process's affinity stands
    std::vector<std::string> hidden;  // the plugin's whole-task OMP_* names hidden in `env`
};
WorkerView worker_view(const Getenv& task_env, const Node& node, int local_tasks);

// The task's binding, given the node and where the task sits (`place`). `narrowed`: Slurm narrowed this task's
// GPU variables to its own (step_gpus.hpp); then `step_gpus` is the step's set
// on the node, or nullopt when it could not be learned (the task is then
// planned alone on its own GPUs). Throws ParseError / PlanError.
// `constrained`: Slurm constrains devices (step/device_scope.hpp); then a
// narrowed task's step_gpus are the step's physical GPUs (constrained_step_gpus).
// `openable`: the GPU device files the task may open (step/device_probe.hpp).
step::TaskAction binding_for(const Node& node, const step::Options& opt, const Getenv& task_env,
                             const TaskPlace& place, bool narrowed,
                             const std::optional<std::vector<int>>& step_gpus, const CpuSet& host_cpus,
                             const CpuSet& affinity, bool constrained = false,
                             std::optional<int> openable = std::nullopt);

// Under ConstrainDevices a task's own variables count its GPUs 0..k-1; the
// step's physical GPUs on the node come from GPUTOPO_STEP_GPUS (the plugin
// writes it), else every GPU of the node when SLURM_GPUS_ON_NODE counts them
// all, else SLURM_JOB_GPUS in a one-node job whose count matches. nullopt (with
// `why`) when none says.
std::optional<std::vector<int>> constrained_step_gpus(const Getenv& task_env, const Node& node, std::string& why);

// The step's environment for a task in its own device cgroup: SLURM_STEP_GPUS
// the step's physical GPUs, CUDA/ROCR_VISIBLE_DEVICES numbered 0..n-1 over them.
step::Getenv constrained_step_environment(const Getenv& task_env, const std::vector<int>& step_gpus);

struct LaunchBinding {
    bool bound = false;
    step::TaskAction action;              // when bound
    bool failed = false;                  // asked for but not made (a warning; `strict` fails the task)
    std::string note;                     // why unbound, or what the binding could not learn
    std::optional<StepGpusExchange> exchange;  // the step-GPU directory used (forget at exit)
    std::vector<std::string> replaces;    // inherited variables that are the plugin's, not the user's (WorkerView::hidden)
};

// Everything for one task, never throws: skipped, or the node read (once), the
// step's GPUs learned when narrowed, and the action. `place`: the task's
// read_task_place (a problem there fails the binding). `ranked`: see
// binding_skipped (then the node's GPUs stand in for a missing GPU list).
LaunchBinding compute_binding(const Options& o, const Getenv& task_env, const TaskPlace& place, NodeOnce& node,
                              bool ranked = false);

}  // namespace gputopo::launch
