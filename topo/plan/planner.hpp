// The planner: (node, allocated GPUs, local tasks, mode) -> one binding per
// local task. Pure: reads only the model. Deterministic: the same inputs give
// the same plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"

namespace gputopo {

enum class Mode { None, Closest, Island };
const char* mode_name(Mode m);                        // "none", "closest", "island"
// Throws ParseError: "unknown mode 'x' (expected none, closest or island)".
Mode parse_mode(const std::string& text);

struct PlanRequest {
    std::vector<int> gpus;              // allocated GPU indices (Node::gpus index); empty: CPU-only step
    int ntasks = 1;                     // local tasks on this node
    int gpus_per_task = 0;              // 0: allocated / ntasks (at least 1 when there are GPUs)
    std::optional<CpuSet> allowed_cpus; // CPUs the step may use; default: every CPU of the node
    Mode mode = Mode::Closest;
    // More tasks than allowed cores local to their GPUs: false (default) keeps
    // them on those cores' hardware threads; true gives each task whole cores,
    // spilling to the nearest other cores (cpu_allocation.hpp).
    bool whole_cores = false;
    // The GPUs each task holds when Slurm chose them (one entry per task, each
    // a subset of `gpus`: per-task device cgroups under ConstrainDevices):
    // tasks get exactly these, and CPUs, memory and NICs are planned around
    // them. Empty: the planner groups `gpus` itself.
    std::vector<std::vector<int>> task_gpus;
    // CPUs each task gets (-c/--cpus-per-task): the first N of its planned CPUs,
    // whole cores first; never fewer than N while the allowed CPUs have them
    // (cpu_allocation.hpp cpus_for_count); 0: its whole share.
    int cpus_per_task = 0;
};

struct TaskBinding {
    int task = 0;                       // local task id
    std::vector<int> gpus;              // GPU indices
    std::vector<PciAddress> gpu_pci;
    CpuSet cpus;                        // OS PU indices; empty in mode none
    std::vector<int> mems;              // NUMA node OS indices; empty in mode none
    std::vector<std::string> nics;      // RDMA device names, nearest first
    int island = -1;                    // intra-node island id; -1 in mode none
};

struct Plan {
    Mode mode = Mode::None;
    std::vector<TaskBinding> tasks;     // tasks[i].task == i
    std::vector<std::string> node_nics; // usable RDMA NICs for this node's GPUs (NCCL_IB_HCA), PCI order
    std::vector<std::string> notes;     // why the plan is less than ideal (more tasks than GPUs, ...)
};

// Throws PlanError for impossible requests (a GPU index not on the node,
// ntasks < 1, duplicate GPUs).
Plan make_plan(const Node& node, const PlanRequest& request);

}  // namespace gputopo
