// From (node, step inputs, options) to what one task gets: the plan request,
// then per task the variables to set, the GPU order, the CPUs and NUMA nodes
// to apply and the verbose line. Pure: the caller reads and applies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "step/option_parser.hpp"
#include "step/step_inputs.hpp"
#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo::spank {

// The request for this node's plan. `allowed`: see allowed_cpus().
PlanRequest plan_request(const StepInputs& in, int local_tasks, Mode mode, const std::optional<CpuSet>& allowed);

struct TaskAction {
    std::vector<EnvVar> set;         // variables to set (overwrite)
    std::vector<EnvVar> kept;        // the user's values we left alone
    std::vector<int> visible;        // GPU indices the task sees, in order (empty when kept from Slurm)
    std::vector<std::string> visible_ids;  // the UUIDs the task sees, in order (Slurm gave UUIDs)
    std::string kept_note;           // "gpus kept from --gpu-bind=..." when Slurm's GPUs are kept as set
    CpuSet cpus;                     // planned CPUs (empty: none)
    std::vector<int> mems;           // planned NUMA nodes
    bool apply_affinity = false;     // the CPUs exist here and the user did not bind explicitly
    std::string skip_reason;         // why affinity is not applied, "" when applied / nothing to apply
    std::string verbose_line;        // "gputopo: n1 task 3: gpus=3 (0000:5d:00.0) cpus=14-27 mems=1 nic=mlx5_2 island=0"
};

// `current` reads the task's environment (for the keep-the-user's-value rule).
// `cpus_on_host`: the topology's CPUs exist on this host.
TaskAction bind_task(const std::string& node_name, const Node& node, const Plan& plan, int task,
                     const Options& opt, const StepInputs& in, const Getenv& current, bool cpus_on_host);

}  // namespace gputopo::spank
