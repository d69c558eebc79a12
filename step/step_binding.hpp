// The step binding shared by the SPANK plugin and gputopo-launch, modelled on
// mpibind: one call per node plans (StepBinding's constructor), one call per
// task gives that task's whole action (StepBinding::task). Slurm-free and
// pure: the front ends read Slurm's inputs, construct, ask per task, and apply
// with the one applier (step/apply.hpp).
//
//   StepSetup ──► StepBinding(setup, node) ──► plan ──► task(i, env) ──► TaskAction
//   (step env,     reads StepInputs once,                 environment, visible GPUs,
//    options,      plans once                             CPUs, mems + memory policy,
//    node name,                                           apply or why not, verbose
//    task count,                                          line, notes)
//    CPUs)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "step/device_scope.hpp"
#include "step/option_parser.hpp"
#include "step/step_inputs.hpp"
#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"

namespace gputopo::step {

// The request for this node's plan. `allowed`: see allowed_cpus().
PlanRequest plan_request(const StepInputs& in, int local_tasks, Mode mode, const std::optional<CpuSet>& allowed,
                         bool whole_cores = false);

// How a task's memory is bound to its NUMA nodes.
//   Preferred (default): allocate there first, spill elsewhere when full
//     (MPOL_PREFERRED for one node, MPOL_PREFERRED_MANY for several).
//   Bind (`membind`): only there (MPOL_BIND); a task that needs more memory
//     than those nodes have is OOM-killed.
enum class MemPolicy { None, Preferred, Bind };
const char* mempolicy_name(MemPolicy p);  // "none", "preferred", "bind"

// The policy a task gets for `mems` under `opt` (None when mems is empty).
MemPolicy memory_policy(const Options& opt, const std::vector<int>& mems);

struct StepSetup {
    Getenv env;                     // the step's environment on this node (Slurm's variables)
    Options options;
    std::string node_name;          // this node's Slurm name
    int local_tasks = 1;            // tasks of the step on this node
    CpuSet host_cpus;               // the CPUs this host has (online)
    CpuSet affinity;                // the CPUs this process may run on
    // Slurm constrains devices (cgroup.conf ConstrainDevices=yes,
    // slurm_constrains_devices): GPUs are numbered inside each task's or the
    // step's device cgroup, and a per-task GPU binding gives each task a
    // cgroup of its own (step/device_scope.hpp).
    bool devices_constrained = false;
    PerTaskRule per_task_rule = PerTaskRule::Blocks;  // per_task_rule_for(the Slurm built against)
};

struct TaskAction {
    std::vector<EnvVar> wanted;      // every variable gputopo would set (task_env)
    std::vector<EnvVar> set;         // of those, the ones to set (overwrite)
    std::vector<EnvVar> kept;        // the user's values we left alone (name, the user's value)
    std::vector<int> visible;        // GPU indices the task sees, in order (empty when kept from Slurm)
    std::vector<std::string> visible_ids;  // the UUIDs the task sees, in order (Slurm gave UUIDs)
    std::string kept_note;           // "gpus kept from --gpu-bind=..." when Slurm's GPUs are kept as set
    CpuSet cpus;                     // planned CPUs (empty: none)
    std::vector<int> mems;           // planned NUMA nodes
    MemPolicy mempolicy = MemPolicy::None;
    bool apply_affinity = false;     // apply cpus and the memory policy here
    bool apply_memory = false;       // apply the memory policy alone (the user's CPU binding is kept)
    bool user_bound = false;         // not applied because the user bound CPUs explicitly
    std::string skip_reason;         // why they are not applied, "" when applied / nothing to apply
    std::string verbose_line;        // "n1 task 3: gpus=3 (0000:5d:00.0) cpus=14-27 mems=1 (preferred) nic=mlx5_2 island=0"
    std::vector<std::string> notes;  // once per node (task 0), with verbose: GPUs whose nearest NIC is down, ...
    std::vector<std::string> warnings;  // once per node (task 0), always: what the user asked for that cannot be
    // SLURM_CPU_BIND, _TYPE and _LIST saying what is in force when gputopo
    // replaces Slurm's automatic CPU binding: a front end sets them where the
    // task's environment has SLURM_CPU_BIND (task/affinity bound it).
    std::vector<EnvVar> cpu_bind_vars;
};

class StepBinding {
public:
    // Reads the step's inputs from setup.env, resolves devices named by UUID
    // through `node` (resolve_step_devices) and plans this node. Throws
    // ParseError (a malformed Slurm variable) or PlanError.
    StepBinding(const StepSetup& setup, Node node);

    const Node& node() const { return node_; }
    const Plan& plan() const { return plan_; }
    const StepInputs& inputs() const { return inputs_; }
    const Options& options() const { return options_; }
    const std::string& node_name() const { return node_name_; }
    bool cpus_on_host() const { return cpus_on_host_; }
    bool devices_constrained() const { return devices_constrained_; }

    // Local task `task`'s action. `current` reads the task's environment (for
    // the keep-the-user's-value rule and the devices Slurm gave the task when
    // gputopo follows them: step/device_scope.hpp slurm_devices, the one rule).
    // Throws PlanError for a task not planned.
    // `task_affinity`: the CPUs the task runs on now (after task/affinity), read
    // for a CPU binding the user asked Slurm for (its memory policy) and for
    // Slurm's closest/single GPU binding; null when not known.
    // `openable`: how many GPU device files the task may open, read in the task
    // (step/device_probe.hpp openable_gpu_count): what decides whether a task
    // Slurm bound per task holds its own GPUs or the step's; nullopt: not read.
    TaskAction task(int task, const Getenv& current, const CpuSet* task_affinity = nullptr,
                    std::optional<int> openable = std::nullopt) const;

    // Whether task() needs the task's own view: GPUs Slurm set in each task's
    // environment (the user's --gpu-bind, devices named by UUID) or the CPUs
    // of a binding the user asked Slurm for. When not, every task's action
    // follows from the step's environment alone and can be made before the
    // tasks exist (the plugin makes them all before slurmstepd forks), unless
    // task_scope_is_own() says Slurm gave the task a device cgroup of its own.
    bool task_reads_own_gpus() const;

    // With devices constrained, a task whose SLURMD_TRES_BIND (`tres_bind`)
    // holds a per-task GPU binding has a device scope of its own: its action
    // must be made from its own environment (own_device_scope).
    bool task_scope_is_own(const std::optional<std::string>& tres_bind) const;

private:
    DeviceRule device_rule() const;
    Plan scoped_plan(int task, const SlurmDevices& own) const;
    std::optional<Plan> plan_for(int task, const SlurmDevices& held) const;
    TaskEnvOptions env_options(const SlurmDevices& held) const;
    void bind_cpus(const Plan& use, const TaskBinding& b, const CpuSet* task_affinity, TaskAction& a) const;
    void task_notes(const Plan& use, const SlurmDevices& held, TaskAction& a) const;

    Options options_;
    std::string node_name_;
    Node node_;
    StepInputs inputs_;
    bool cpus_on_host_ = false;
    bool devices_constrained_ = false;
    PerTaskRule per_task_rule_ = PerTaskRule::Blocks;
    int local_tasks_ = 1;
    std::optional<CpuSet> allowed_;
    Plan plan_;
};

}  // namespace gputopo::step
