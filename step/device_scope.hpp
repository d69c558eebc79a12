// Which GPUs a task can open, by Slurm's own rule, and how it numbers them.
//
// Slurm binds GPUs per task when its GPU binding is per_task:N (what srun sets
// itself for --gpus-per-task), map_gpu, mask_gpu, closest or single:N
// (--gpu-bind / --tres-bind=gres/gpu:...; slurmstepd writes it in each task's
// SLURMD_TRES_BIND, e.g. "gpu:per_task:2"). With task/cgroup and
// ConstrainDevices=yes each such task gets a devices cgroup of its own holding
// only its GPUs, and Slurm numbers them 0..k-1 in every GPU variable
// (gres_use_local_device_index(): CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
// even SLURM_STEP_GPUS, which then names no physical GPU). Without a per-task
// binding the device scope is the step's; with ConstrainDevices it is numbered
// 0..k-1 over the step's GPUs.
//
// Which physical GPUs a task holds follows Slurm 22.05-26.05 src/interfaces/
// gres.c _get_usable_gres(), applied to the step's GPUs on the node (sorted):
//   per_task:N      the task with local id i holds the step's GPUs at positions
//                   [i*N, i*N+N) (_filter_gres_per_task)
//   map_gpu:L       entry i of L (with "*count" repeats, cycling) is a position
//                   in the step's GPUs when devices are constrained (local
//                   index), a GPU index otherwise (_get_usable_gres_map_or_mask)
//   mask_gpu:L      likewise, each bit a position / GPU index
//   closest         the step's GPUs whose CPUs (gres.conf Cores=; gputopo uses
//                   the topology's local CPUs, which an admin keeps equal) meet
//                   the task's CPU affinity; single:N then keeps one of them,
//                   (i / N) % count (_get_usable_gres_cpu_affinity,
//                   _filter_usable_gres)
// A binding that names no GPU of the step gives the step's first (Slurm: "Binding
// to the first device in the allocation instead").
//
// This is also the one home of "keep Slurm's devices" (slurm_devices below):
// which devices Slurm gave a task when gputopo follows Slurm's choice rather
// than its own plan, on sites with and without ConstrainDevices alike.
// Pure: strings, lists and the task's environment (a Getenv) in, lists out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "step/step_inputs.hpp"
#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"

namespace gputopo::step {

struct SlurmGpuBind {
    enum class Kind { None, PerTask, MapGpu, MaskGpu, Closest, Single };
    Kind kind = Kind::None;
    int count = 0;           // per_task:N, single:N
    std::string list;        // map_gpu / mask_gpu values, as given
    bool per_task() const { return kind != Kind::None; }
};

// The gres/gpu part of a TRES binding: "gpu:per_task:2", "gres/gpu:map_gpu:3,2",
// "verbose,closest", "single:1", "none", "". Anything else (and "none") is Kind::None.
SlurmGpuBind parse_slurm_gpu_bind(const std::string& text);

// How Slurm picks per_task:N GPUs: in blocks (22.05-23.02), or, from 23.11 on,
// task by task, first the free GPUs near the task's CPUs, then any
// (_get_gres_per_task). The front ends pass the release they were built for.
enum class PerTaskRule { Blocks, NearestFirst };
PerTaskRule per_task_rule_for(unsigned long slurm_version_number);  // SLURM_VERSION_NUMBER, 0: Blocks
// The rule of the Slurm release this build is for (the Makefile passes its
// SLURM_VERSION_NUMBER; Blocks when built without Slurm's headers).
PerTaskRule built_per_task_rule();

// The physical GPUs (node-wide indices, sorted) Slurm gives local task `task`
// under `bind`, from the step's GPUs on the node (`step_gpus`, sorted).
// `constrained`: devices constrained (map/mask values are positions in the
// step's GPUs). `task_cpus[j]`: the CPUs Slurm placed local task j on
// (task_cpus_from_slurm; empty sets when unknown), read by closest, single and
// the NearestFirst per_task rule, with `node` for the GPUs' CPUs. nullopt when
// the binding cannot be read or the GPUs' CPUs are needed and `node` is null.
// `locality`: the node's GPU-CPU locality stands for gres.conf's Cores= (true
// when the topology is this host's); false: every GPU counts as near every CPU,
// as Slurm takes a gres.conf line without Cores=.
std::optional<std::vector<int>> slurm_task_gpus(const SlurmGpuBind& bind, const std::vector<int>& step_gpus, int task,
                                                bool constrained, const Node* node,
                                                const std::vector<CpuSet>& task_cpus,
                                                PerTaskRule rule = PerTaskRule::Blocks, bool locality = true);

// The CPUs task/affinity placed each local task on, as its SLURM_CPU_BIND_TYPE
// and SLURM_CPU_BIND_LIST say (mask_cpu: hex masks, map_cpu: CPU numbers),
// `ntasks` entries (cycling through a shorter list, as Slurm does); empty sets
// when the list is absent or of another kind. At most 4096 tasks are read.
// `within` (the node's CPUs): each set is cut to them.
std::vector<CpuSet> task_cpus_from_slurm(const std::optional<std::string>& bind_type,
                                         const std::optional<std::string>& bind_list, int ntasks,
                                         const CpuSet* within = nullptr);

// ConstrainDevices=yes in the cgroup.conf text, read as Slurm reads it
// (topo/core/conf_lines: spaces around '=', quoted values, keys and yes/no
// case-insensitive, '#' comments, the last value wins); false for text Slurm refuses.
bool cgroup_conf_constrains_devices(const std::string& cgroup_conf_text);

// Whether Slurm constrains devices on this node: `slurm_dir`/cgroup.conf says
// ConstrainDevices=yes (read bounded; absent or unreadable: false). Slurm's own
// rule also needs task/cgroup in TaskPlugin; gputopo does not read slurm.conf
// (large at big sites) for it: a site with ConstrainDevices=yes runs task/cgroup.
bool slurm_constrains_devices(const std::string& slurm_dir);

// ---- Keep Slurm's devices: the one rule -------------------------------------

// Slurm numbers the step's GPUs 0..k-1 in its device cgroup: devices
// constrained, the step holds GPUs, and they are named by index (not UUID).
bool step_cgroup_numbering(const StepInputs& in, bool constrained);

// With step_cgroup_numbering, a task whose SLURMD_TRES_BIND (`tres_bind`)
// holds a per-task GPU binding has a device cgroup of its own.
bool own_device_scope(const StepInputs& in, bool constrained, const std::optional<std::string>& tres_bind);

// Slurm's GPUs are kept as it set them in each task: the user's --gpu-bind,
// or devices named by UUID.
bool keeps_slurm_gpus(const StepInputs& in);

// Whether a task Slurm bound per task can open more than its own GPUs, decided
// by what the task can open: `openable` GPU device files (read in the task,
// step/device_probe.hpp; nullopt or 0: unknown) against `own`, the count of its
// GPUs by Slurm's rule, and `step`, the step's on the node. Unknown: Slurm's
// `visible` (the task's CUDA_VISIBLE_DEVICES) names a position at or beyond
// `own`, which a per-task cgroup never does (it numbers 0..own-1) and 23.11+
// --gres-flags=allow-task-sharing does (task i of --gpus-per-task=1 gets i).
bool task_opens_step_gpus(std::optional<int> openable, size_t own, size_t step,
                          const std::optional<std::string>& visible);

// The devices Slurm gave one local task.
//   OwnCgroup  own_device_scope: the task's own device cgroup; `gpus` by Slurm's
//              rule (slurm_task_gpus over the step's GPUs), `all` every local
//              task's when that rule gives them all; `bind` its SLURMD_TRES_BIND.
//              `gpus` empty: cannot tell, `problem` says why (no rule reading,
//              or the task's CUDA_VISIBLE_DEVICES counts otherwise).
//   Kept       keeps_slurm_gpus (and not OwnCgroup): `gpus` from the task's own
//              variables (task_gpus_from_slurm), or the parents of its UUIDs
//              (`ids`, `id_parents`: the task's UUIDs where it can open only
//              those, else the step's); empty when unknown.
//   Plan       neither: gputopo's plan decides the task's GPUs.
// `step_scope`: Slurm bound the task per task but it can open the step's GPUs
// (task_opens_step_gpus: --gres-flags=allow-task-sharing): no cgroup of its
// own, its GPUs numbered in the step's set.
struct SlurmDevices {
    enum class From { Plan, OwnCgroup, Kept };
    From from = From::Plan;
    std::vector<int> gpus;                  // physical GPU indices, sorted
    std::vector<std::vector<int>> all;      // OwnCgroup: every local task's
    std::vector<std::string> ids;           // Kept by UUID
    std::vector<int> id_parents;            // the GPU of each of `ids`
    std::string bind;                       // OwnCgroup: SLURMD_TRES_BIND
    std::string problem;                    // OwnCgroup with no `gpus`
    bool step_scope = false;
};

// What the rule reads besides the task: the step's node and how Slurm runs it.
struct DeviceRule {
    int local_tasks = 1;                    // the step's tasks on this node
    bool constrained = false;               // slurm_constrains_devices
    PerTaskRule per_task = PerTaskRule::Blocks;
    bool locality = true;                   // see slurm_task_gpus
};

// Local task `task`'s devices, from the step's inputs (read_step_inputs, UUIDs
// resolved) and the task's own environment `current` (SLURMD_TRES_BIND,
// SLURM_CPU_BIND_TYPE/_LIST, SLURM_STEP_GPUS, CUDA/ROCR_VISIBLE_DEVICES).
// `task_affinity`: the CPUs the task runs on now (closest, single), or null.
// `openable`: how many GPU device files the task may open (openable_gpu_count,
// read in the task), nullopt when not read.
SlurmDevices slurm_devices(const Node& node, const StepInputs& in, const DeviceRule& rule, int task,
                           const Getenv& current, const CpuSet* task_affinity,
                           std::optional<int> openable = std::nullopt);

}  // namespace gputopo::step
