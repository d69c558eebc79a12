// What a process can see of its share of a node when no Slurm step describes
// it (a Kubernetes pod, or a process under torchrun / mpirun):
//   - its CPUs: the cgroup cpuset (cgroup v2 cpuset.cpus.effective of the
//     process's own cgroup, else of /sys/fs/cgroup itself, the container's
//     cgroup namespace; cgroup v1 cpuset.effective_cpus) -- the kubelet's CPU
//     manager writes the pod's exclusive CPUs there;
//   - its GPUs: NVIDIA_VISIBLE_DEVICES, the device plugin's choice. The
//     container runtime exposes only those, and CUDA and NVML inside the
//     container number them 0..k-1 (in PCI bus-id order with
//     CUDA_DEVICE_ORDER=PCI_BUS_ID). The binding needs the node's own numbering
//     (GPU index = position in PCI bus-id order among the node's GPUs, what
//     the topology describes): a UUID is found in
//     /proc/driver/nvidia/gpus/BUS/information ("GPU UUID:"), and BUS's
//     position among the NVIDIA GPUs in /sys/bus/pci/devices (vendor 0x10de,
//     class 0x0300xx or 0x0302xx) is its index; plain indices are the node's
//     already. A UUID that cannot be placed leaves the container's numbering
//     (and a note). "all" or no variable = every GPU in
//     /proc/driver/nvidia/gpus; "none", "void" or "" = none.
// `root` prefixes every path ("" = the real /), so tests fake a pod.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/options/options.hpp"
#include "topo/core/cpuset.hpp"

namespace gputopo::launch {

// The cgroup cpuset; nullopt when no cpuset file is readable. Never throws.
std::optional<CpuSet> cgroup_cpuset(const std::string& root);

struct PodGpus {
    std::vector<int> gpus;       // the node's GPU indices, ascending
    std::vector<int> container;  // how CUDA inside numbers them (0..k-1); empty when the same as gpus
    std::string from;            // "NVIDIA_VISIBLE_DEVICES", "/proc/driver/nvidia/gpus", "" none found
    std::string note;            // why the container's numbering had to stand in ("" none)
};
PodGpus pod_gpus(const Getenv& getenv_fn, const std::string& root);

}  // namespace gputopo::launch
