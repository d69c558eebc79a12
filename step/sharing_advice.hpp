// What gputopo says, once per node, when a step asks for GPUs shared between
// its ranks (--gpu-topo=...,share, or island: the ranks of an NVLink island
// talk through CUDA IPC and peer access) while Slurm gives each task a device
// cgroup of its own (--gpus-per-task under ConstrainDevices), in which a rank
// can open only its own GPUs. Kept apart from step/device_scope (which GPUs a
// task holds): this only words the advice for the Slurm release.
#pragma once

#include <string>

namespace gputopo::step {

// The release that has --gres-flags=allow-task-sharing (every task of the
// step may open the step's GPUs on its node, per-task GPUs kept).
constexpr unsigned long kAllowTaskSharingSince = (23UL << 16) | (11UL << 8);

// One line (without the node prefix) for `what` ("share", "island") under
// per-task device cgroups, on Slurm `slurm_version_number` (SLURM_VERSION_NUMBER
// as 0xMMmmuu; 0 unknown): names --gres-flags=allow-task-sharing where the
// release has it (23.11+), else --gpus-per-node with --ntasks-per-node.
std::string per_task_cgroup_sharing_advice(const std::string& what, unsigned long slurm_version_number);

// The Slurm release this build is for (the Makefile passes SLURM_VERSION_NUMBER;
// 0 when built without Slurm's headers).
unsigned long built_slurm_version();

}  // namespace gputopo::step
