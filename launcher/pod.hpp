// What a process can see of its share of a node when no Slurm step describes
// it (a Kubernetes pod, or a process under torchrun / mpirun):
//   - its CPUs: the cgroup cpuset (cgroup v2 cpuset.cpus.effective of the
//     process's own cgroup, else of /sys/fs/cgroup itself, the container's
//     cgroup namespace; cgroup v1 cpuset.effective_cpus) -- the kubelet's CPU
//     manager writes the pod's exclusive CPUs there;
//   - its GPUs: NVIDIA_VISIBLE_DEVICES (the device plugin's UUIDs or indices;
//     the container runtime exposes only those, and CUDA and NVML inside the
//     container number them from 0, so k entries are GPUs 0..k-1), "all" or
//     no variable = every GPU in /proc/driver/nvidia/gpus, "none"/"void" =
//     none.
// `root` prefixes every path ("" = the real /), so tests fake a pod.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/options.hpp"
#include "topo/core/cpuset.hpp"

namespace gputopo::launch {

// The cgroup cpuset; nullopt when no cpuset file is readable. Never throws.
std::optional<CpuSet> cgroup_cpuset(const std::string& root);

struct PodGpus {
    std::vector<int> gpus;   // container numbering
    std::string from;        // "NVIDIA_VISIBLE_DEVICES", "/proc/driver/nvidia/gpus", "" none found
};
PodGpus pod_gpus(const Getenv& getenv_fn, const std::string& root);

}  // namespace gputopo::launch
