// The environment one task gets from a plan: the single definition shared by
// the SPANK plugin and the launcher, so both produce the same binding.
// Pure: no getenv/setenv here; the caller passes what the environment holds.
//
// Rules
// - GPUTOPO_MODE, GPUTOPO_GPUS (GPU indices), GPUTOPO_GPU_PCI, GPUTOPO_CPUS,
//   GPUTOPO_MEMS, GPUTOPO_NIC (the task's NICs, nearest first),
//   GPUTOPO_ISLAND: always ours, always set (omitted when empty); GPUTOPO_NIC
//   names only NICs with a device name (never a PCI address).
// - GPU visibility. Shared view (default for one GPU per task): every task of
//   the node sees the step's GPUs in one order, where position = local task
//   id holds that task's planned GPU (then GPUs no task got, by index), so
//   `set_device(LOCAL_RANK)` lands on the planned GPU and CUDA IPC / NVLink
//   P2P between ranks keep working. Isolated view (`isolate`, or several
//   GPUs per task unless `share`): a task sees only its own GPU(s).
//   NVIDIA: CUDA_VISIBLE_DEVICES = that order. AMD: ROCR_VISIBLE_DEVICES =
//   that order and CUDA_VISIBLE_DEVICES = 0..k-1 (HIP numbers devices after
//   ROCr's filter, so HIP's device i is ROCR's i-th entry).
//   Numbers are GPU indices, or positions in the step's GPU list when Slurm
//   numbers devices relative to the step (cgroup ConstrainDevices).
//   These replace Slurm's own values: Slurm chose the set, we only order it.
// - CUDA_DEVICE_ORDER=PCI_BUS_ID, NCCL_IB_HCA="=mlx5_0,mlx5_3" (the node-wide
//   exact-match list, the same for every task of the node), UCX_NET_DEVICES=
//   "mlx5_2:1" (the task's nearest NIC and its port): a value the user already
//   set is kept (keep_user_values). Only for verbs NICs with a device name:
//   EFA and Slingshot/CXI get libfabric's variables instead, and a NIC known
//   only by its PCI address is never named (topo/plan/fabric_env.hpp).
// - OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND from the task's CPUs
//   (topo/plan/omp_env.hpp), the user's values kept.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "topo/core/env_var.hpp"
#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"

namespace gputopo {

struct TaskEnvOptions {
    bool isolate = false;        // each task sees only its own GPU(s)
    bool share = false;          // keep the shared view even with several GPUs per task
    // The step's GPUs on this node (GPU indices, the order Slurm listed them).
    // Empty: the GPUs the plan's tasks use.
    std::vector<int> step_gpus;
    // Slurm numbers CUDA_VISIBLE_DEVICES by position in step_gpus (sorted),
    // not by GPU index (cgroup ConstrainDevices).
    bool relative_numbering = false;
    // -c/--cpus-per-task was given: one OpenMP place per CPU (omp_env.hpp).
    bool omp_per_thread = false;
};

// True when the task sees only its own GPUs.
bool task_isolated(const Plan& plan, int task, const TaskEnvOptions& opt);

// The physical GPU indices the task sees, in visibility order.
std::vector<int> visible_gpus(const Plan& plan, int task, const TaskEnvOptions& opt);

// Every variable for local task `task` (0-based). Throws PlanError when the
// task is not in the plan. Mode none: an empty list (gputopo stays out).
std::vector<EnvVar> task_env(const Node& node, const Plan& plan, int task, const TaskEnvOptions& opt);

struct ResolvedEnv {
    std::vector<EnvVar> set;     // to set (overwrite)
    std::vector<EnvVar> kept;    // user_wins variables the user had set: name + the user's value
};

// Splits `wanted` by what `current` (a getenv) returns.
ResolvedEnv keep_user_values(const std::vector<EnvVar>& wanted,
                             const std::function<std::optional<std::string>(const std::string&)>& current);

}  // namespace gputopo
