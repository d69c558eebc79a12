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

#include <functional>
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
    std::string identity;      // this attempt of this step (step_identity); entries with another are refused
};

using StepEnv = std::function<std::optional<std::string>(const std::string&)>;

// Who this step is, beyond JOB.STEP (issue 20, H2): the attempt
// (SLURM_RESTART_COUNT, 0 when unset) and the srun that launched it
// (SLURM_SRUN_COMM_HOST/PORT, SLURM_STEP_LAUNCHER_PORT, SLURM_LAUNCH_NODE_IPADDR),
// so that what a launcher of an earlier attempt (a requeue onto this node) or of
// an earlier job with the same id left behind is never read as this step's.
// Only [A-Za-z0-9.-] are kept.
std::string step_identity(const StepEnv& env);

// Publishes `own` as local task local_id and waits until every local task has
// published; returns the union, sorted. nullopt (with `note` saying why) when
// the directory is unsafe or unusable, or when some tasks never publish (a
// step where not every task runs gputopo-launch).
std::optional<std::vector<int>> exchange_step_gpus(const StepGpusExchange& x, const std::vector<int>& own,
                                                   std::string& note);

// The directory for this step on `node`: DIR/JOB.STEP.NODE.IDENTITY, DIR =
// node_private_dir(node_state_dir, node, TMPDIR) (launcher/state/node_state.hpp: --node-state-dir,
// /dev/shm, TMPDIR, /tmp, the first where this user's private directory is
// usable), which the leader election uses too. JOB, STEP, TMPDIR and the
// identity come from `env`. Returns "" with `note` when none is usable.
std::string step_gpus_dir(const StepEnv& env, const std::string& node, const std::string& node_state_dir,
                          std::string& note);

// At this task's exit: marks it done; the last local task removes the directory.
void forget_step_gpus(const StepGpusExchange& x);

}  // namespace gputopo::launch
