// The task's binding when the SPANK plugin did not bind it (GPUTOPO_MODE
// unset): the same plan and the same environment (topo/task_env) the plugin
// would give, computed from SLURM_* and the node topology. Any failure gives
// one warning and an unbound task.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/options.hpp"
#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo::launch {

struct BindingInputs {
    std::vector<int> gpus;       // the GPUs to plan for on this node
    int ntasks = 1;              // tasks in the plan
    int task = 0;                // which of them this task is
    bool own_gpus_only = false;  // Slurm narrowed the task to its own GPUs (--gpus-per-task)
    bool relative_numbering = false;  // CUDA_VISIBLE_DEVICES is 0..k-1 for SLURM_STEP_GPUS (constrained devices, a pod)
};

// Pure: reads SLURM_STEP_GPUS / CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES,
// SLURM_GPUS_PER_TASK, SLURM_LOCALID and the tasks on this node. Throws
// ParseError naming a malformed variable. No GPUs: gpus empty.
BindingInputs binding_inputs(const Getenv& getenv_fn);

// "%n" -> node name, "%h" -> host name.
std::string expand_topology_path(const std::string& pattern, const std::string& node, const std::string& host);

struct BindingOutcome {
    bool bound = false;
    std::string mode;
    std::vector<EnvVar> env;         // to apply with keep_user_values
    std::optional<CpuSet> cpus;      // affinity to apply, when the CPUs exist here
    std::string note;                // why unbound / what was not applied ("" none)
    std::string summary;             // "gpus=0 cpus=0-3 mems=0 nic=mlx5_0 island=0"
};

// True when every CPU in `cpus` exists on this host (/sys/devices/system/cpu/online).
bool host_cpus_contain(const CpuSet& cpus);

// Given the node: the plan and the env for this task. `usable_cpus` (the
// launcher's affinity) bounds the plan only when the node's CPUs are this
// host's, the same rule the plugin follows.
BindingOutcome binding_for(const Node& node, const BindingInputs& in, const std::string& gpu_topo,
                           const std::optional<CpuSet>& usable_cpus);

// The node from `path` ("" = this machine) through the topology module
// (launcher/topology/, gputopo-launch-topology.so next to the launcher or in
// ../lib/gputopo/, or $GPUTOPO_LAUNCH_TOPOLOGY_MODULE). Throws TopologyError.
Node load_node(const std::string& path);
std::string topology_module_path();

// Everything: reads the topology (file or live), never throws.
BindingOutcome compute_binding(const Options& o, const Getenv& getenv_fn);

}  // namespace gputopo::launch
