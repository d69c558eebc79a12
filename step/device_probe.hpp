// What a task can open: the GPU device files its devices cgroup lets it use,
// read from inside the task (SPANK task_init, or gputopo-launch in the task).
//
// Slurm's devices cgroup (v1 devices.deny, v2 a BPF program) is checked by the
// kernel in inode_permission(), so access(2) answers EPERM for a device the
// task may not use without opening it (opening a GPU can wake its driver).
// Which scope the task has then follows from how many of the node's GPU files
// it may use: its own GPUs (a per-task cgroup), the step's (a per-step cgroup,
// or 23.11+ --gres-flags=allow-task-sharing), or all of them.
#pragma once

#include <optional>
#include <string>

namespace gputopo::step {

// The GPU device files in `dir` ("" = /dev and /dev/dri): nvidiaN and renderDN
// (N a number: never nvidiactl, nvidia-uvm, nvidia-caps). `present`: how many;
// `openable`: how many access(R_OK|W_OK) does not refuse with EPERM or EACCES.
// At most 1024 files are looked at. nullopt when there is none (no such
// directory, a container without them): the caller cannot tell.
struct GpuDeviceFiles {
    int present = 0;
    int openable = 0;
};
std::optional<GpuDeviceFiles> probe_gpu_device_files(const std::string& dir);

// The number of GPU device files the task may open, for StepBinding::task
// (nullopt: unknown).
std::optional<int> openable_gpu_count(const std::string& dir);

}  // namespace gputopo::step
