// The step's GPUs on this node, for a task whose variables Slurm narrowed.
//
// With --gpus-per-task (or any per-task GPU binding: SLURMD_TRES_BIND=gpu:...
// in the task's environment), Slurm 22.05 sets each task's SLURM_STEP_GPUS and
// CUDA_VISIBLE_DEVICES to that task's own GPUs before the program starts,
// while the plugin plans in user_init from the step's whole set on the node.
// `scontrol show step -d` does not list a step's GPU indices per node (22.05:
// only TresPerTask/TresBind), and `scontrol show job -d` lists the job's, not
// the step's. The local tasks together hold the step's set: each launcher
// publishes its own GPUs in a per-user, per-step directory on this node and
// takes the union once every local task has published. No slurmctld RPC.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gputopo::launch {

// True when Slurm bound GPUs per task (SLURMD_TRES_BIND holds "gpu:"), so this
// task's SLURM_STEP_GPUS is its own share of the step's GPUs.
bool gpus_narrowed(const std::optional<std::string>& tres_bind);

struct StepGpusExchange {
    std::string dir;           // the step's directory on this node
    int local_id = 0;
    int local_tasks = 1;
    double timeout_s = 10;     // how long to wait for the other local tasks
};

// Publishes `own` as local task local_id and waits until every local task has
// published; returns the union, sorted. nullopt (with `note` saying why) when
// the directory is unsafe or unusable, or when some tasks never publish (a
// step where not every task runs gputopo-launch).
std::optional<std::vector<int>> exchange_step_gpus(const StepGpusExchange& x, const std::vector<int>& own,
                                                   std::string& note);

// The directory for job.step on `node`: BASE/gputopo-launch.UID/JOB.STEP.NODE,
// BASE = /dev/shm when writable, else $TMPDIR, else /tmp: the per-user
// directory of private_state_dir() (requeue.hpp), which the leader election
// uses too. Returns "" with `note` when it is unsafe or cannot be made.
std::string step_gpus_dir(const std::string& job, const std::string& step, const std::string& node,
                          std::string& note);

// At this task's exit: marks it done; the last local task removes the directory.
void forget_step_gpus(const StepGpusExchange& x);

}  // namespace gputopo::launch
