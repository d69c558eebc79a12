#include "step/step_binding.hpp"

#include <algorithm>

#include "step/gpu_ids.hpp"
#include "step/sharing_advice.hpp"
#include "topo/plan/cpu_allocation.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/plan/fabric_env.hpp"
#include "topo/plan/nic_selection.hpp"
#include "topo/sources/nic_state.hpp"

namespace gputopo::step {

PlanRequest plan_request(const StepInputs& in, int local_tasks, Mode mode, const std::optional<CpuSet>& allowed,
                         bool whole_cores) {
    PlanRequest r;
    r.whole_cores = whole_cores;
    r.cpus_per_task = in.cpus_per_task;
    r.gpus = in.gpus;
    r.ntasks = local_tasks < 1 ? 1 : local_tasks;
    r.allowed_cpus = allowed;
    r.mode = mode;
    return r;
}

const char* mempolicy_name(MemPolicy p) {
    switch (p) {
    case MemPolicy::Preferred: return "preferred";
    case MemPolicy::Bind: return "bind";
    case MemPolicy::None: break;
    }
    return "none";
}

MemPolicy memory_policy(const Options& opt, const std::vector<int>& mems) {
    if (mems.empty()) return MemPolicy::None;
    return opt.membind ? MemPolicy::Bind : MemPolicy::Preferred;
}

StepBinding::StepBinding(const StepSetup& setup, Node node)
    : options_(setup.options), node_name_(setup.node_name), node_(std::move(node)) {
    inputs_ = read_step_inputs(setup.env);
    resolve_step_devices(node_, inputs_);  // GPU-/MIG- UUIDs -> their GPUs
    devices_constrained_ = setup.devices_constrained;
    per_task_rule_ = setup.per_task_rule;
    local_tasks_ = std::max(1, setup.local_tasks);
    // In the step's device cgroup Slurm numbers its GPUs 0..k-1 (local index).
    if (step_cgroup_numbering(inputs_, devices_constrained_)) inputs_.relative_numbering = true;
    cpus_on_host_ = topology_cpus_on_host(node_, setup.host_cpus);
    allowed_ = allowed_cpus(node_, setup.host_cpus, setup.affinity);
    plan_ = make_plan(node_, plan_request(inputs_, local_tasks_, options_.mode, allowed_, options_.whole_cores));
}

namespace {

bool subset(const std::vector<int>& a, const std::vector<int>& b) {
    for (int x : a)
        if (std::find(b.begin(), b.end(), x) == b.end()) return false;
    return true;
}

void drop(std::vector<EnvVar>& env, const char* name) {
    env.erase(std::remove_if(env.begin(), env.end(), [&](const EnvVar& v) { return v.name == name; }), env.end());
}

// OpenMP places follow gputopo's CPU plan: none when that plan is not applied.
void drop_omp(std::vector<EnvVar>& env) {
    for (const char* name : {env::kOmpNumThreads, env::kOmpPlaces, env::kOmpProcBind}) drop(env, name);
}

// When the plan did not give this task the GPUs Slurm gave it (`held`): a copy
// of the plan whose task holds the binding around those GPUs (CPUs, memory,
// NIC of those GPUs). Otherwise nothing: the plan stands.
std::optional<Plan> plan_around_held(const Node& node, const Plan& plan, int task, const std::vector<int>& held) {
    const TaskBinding& planned = plan.tasks.at(static_cast<size_t>(task));
    if (held.empty() || (!planned.gpus.empty() && subset(planned.gpus, held))) return std::nullopt;
    PlanRequest r;
    r.gpus = held;
    r.mode = plan.mode;
    Plan around = plan;
    TaskBinding b = make_plan(node, r).tasks.at(0);
    b.task = task;
    around.tasks[static_cast<size_t>(task)] = b;
    return around;
}

// Slurm's UUIDs in the planned order. Shared view: position i holds an
// instance of task i's GPU, then the rest by planned visibility.
// Isolated: only the UUIDs of the task's own GPUs.
std::vector<std::string> planned_id_order(const Plan& plan, int task, const TaskEnvOptions& eo,
                                          const SlurmDevices& kept) {
    std::vector<int> order;
    const bool isolated = task_isolated(plan, task, eo);
    if (!isolated)
        for (const TaskBinding& t : plan.tasks)
            if (!t.gpus.empty()) order.push_back(t.gpus.front());
    const std::vector<int> visible = visible_gpus(plan, task, eo);
    for (int g : visible) order.push_back(g);
    if (!isolated) return order_ids(kept.ids, kept.id_parents, order);
    std::vector<std::string> ids;
    std::vector<int> parents;
    for (size_t i = 0; i < kept.ids.size() && i < kept.id_parents.size(); ++i)
        if (std::find(visible.begin(), visible.end(), kept.id_parents[i]) != visible.end()) {
            ids.push_back(kept.ids[i]);
            parents.push_back(kept.id_parents[i]);
        }
    return order_ids(ids, parents, order);
}

void drop_gpu_visibility(std::vector<EnvVar>& wanted) {
    drop(wanted, env::kCudaVisibleDevices);
    drop(wanted, env::kRocrVisibleDevices);
    drop(wanted, env::kHipVisibleDevices);
}

// Kept devices (the user's --gpu-bind, or UUIDs): CUDA/ROCR variables dropped
// from `wanted`, the UUIDs reordered (set in `wanted`) or a note saying why
// they stay as Slurm set them.
void keep_set_devices(const Plan& plan, int task, const TaskEnvOptions& eo, const StepInputs& in,
                      const SlurmDevices& kept, std::vector<EnvVar>& wanted, TaskAction& a) {
    drop(wanted, env::kCudaVisibleDevices);
    drop(wanted, env::kRocrVisibleDevices);
    if (!in.gpu_bind.empty()) {
        a.kept_note = "gpus kept from --gpu-bind=" + in.gpu_bind;
    } else if (!kept.id_parents.empty() && !plan.tasks.at(static_cast<size_t>(task)).gpus.empty()) {
        a.visible_ids = planned_id_order(plan, task, eo, kept);
        wanted.push_back({env::kCudaVisibleDevices, join_strings(a.visible_ids), false});
    } else {
        a.kept_note = in.device_problem.empty() ? "devices kept as Slurm set them" : in.device_problem;
    }
}

// The task's own device cgroup: the user's --gpu-bind keeps the devices as
// Slurm numbered them there; GPUs nobody can tell keep Slurm's variables and
// drop gputopo's GPU ones.
void keep_cgroup_devices(const StepInputs& in, const SlurmDevices& own, std::vector<EnvVar>& wanted, TaskAction& a) {
    if (!own.gpus.empty()) {
        if (in.gpu_bind.empty()) return;
        drop_gpu_visibility(wanted);
        a.kept_note = "gpus kept from --gpu-bind=" + in.gpu_bind;
        return;
    }
    drop_gpu_visibility(wanted);
    drop(wanted, env::kGpus);
    drop(wanted, env::kGpuPci);
    a.kept_note = own.problem + ": devices kept as Slurm set them";
}

// The task's GPU variables where Slurm's devices are kept (slurm_devices):
// the one place `wanted` follows Slurm's choice instead of gputopo's plan.
void keep_slurm_devices(const Plan& plan, int task, const TaskEnvOptions& eo, const StepInputs& in,
                        const SlurmDevices& d, std::vector<EnvVar>& wanted, TaskAction& a) {
    switch (d.from) {
    case SlurmDevices::From::Plan: return;
    case SlurmDevices::From::Kept: return keep_set_devices(plan, task, eo, in, d, wanted, a);
    case SlurmDevices::From::OwnCgroup: return keep_cgroup_devices(in, d, wanted, a);
    }
}

// gputopo's planned visibility is the task's: not where Slurm's set devices
// are kept, nor in a device cgroup whose GPUs nobody can tell.
bool planned_visibility(const SlurmDevices& d) {
    return d.from == SlurmDevices::From::Plan || (d.from == SlurmDevices::From::OwnCgroup && !d.gpus.empty());
}

// Masks as Slurm writes them in SLURM_CPU_BIND_LIST: "0x3", lower-case hex.
std::string hex_mask(const CpuSet& cpus) {
    const int last = cpus.last();
    if (last < 0) return "0x0";
    std::string out;
    for (int nibble = last / 4; nibble >= 0; --nibble) {
        int v = 0;
        for (int b = 0; b < 4; ++b)
            if (cpus.test(nibble * 4 + b)) v |= 1 << b;
        out += "0123456789abcdef"[v];
    }
    return "0x" + out;
}

std::string verbose_line(const std::string& node_name, int task, const TaskBinding& b, const TaskAction& a) {
    std::string line = node_name + " task " + std::to_string(task) + ":";
    line += " gpus=" + (b.gpus.empty() ? std::string("none") : join_ints(b.gpus));
    if (!b.gpu_pci.empty()) {
        std::vector<std::string> pci;
        for (const auto& p : b.gpu_pci) pci.push_back(p.to_string());
        line += " (" + join_strings(pci) + ")";
    }
    line += " cpus=" + (a.cpus.empty() ? std::string("any") : a.cpus.to_list());
    line += " mems=" + (a.mems.empty() ? std::string("any") : join_ints(a.mems));
    if (a.mempolicy != MemPolicy::None) line += std::string(" (") + mempolicy_name(a.mempolicy) + ")";
    line += " nic=" + (b.nics.empty() ? std::string("none") : join_strings(b.nics));
    line += " island=" + std::to_string(b.island);
    if (!a.visible.empty()) line += " visible=" + join_ints(a.visible);
    if (!a.visible_ids.empty()) line += " visible=" + join_strings(a.visible_ids);
    if (!a.kept_note.empty()) line += " (" + a.kept_note + ")";
    for (const auto& k : a.kept) line += " (kept user's " + k.name + "=" + k.value + ")";
    if (!a.skip_reason.empty()) line += " (" + a.skip_reason + ")";
    return line;
}

}  // namespace

bool StepBinding::task_reads_own_gpus() const {
    return keeps_slurm_gpus(inputs_) || inputs_.cpu_request == CpuBindRequest::User;
}

bool StepBinding::task_scope_is_own(const std::optional<std::string>& tres_bind) const {
    return own_device_scope(inputs_, devices_constrained_, tres_bind);
}

DeviceRule StepBinding::device_rule() const {
    DeviceRule r;
    r.local_tasks = local_tasks_;
    r.constrained = devices_constrained_;
    r.per_task = per_task_rule_;
    r.locality = cpus_on_host_;  // the topology's GPU locality stands for gres.conf Cores= on its own host only
    return r;
}

// The plan for a task whose GPUs Slurm chose: every local task's GPUs fixed
// (CPUs shared out among them as usual), else this task planned alone on its own.
Plan StepBinding::scoped_plan(int task, const SlurmDevices& sc) const {
    PlanRequest r = plan_request(inputs_, local_tasks_, options_.mode, allowed_, options_.whole_cores);
    if (sc.all.size() == static_cast<size_t>(local_tasks_)) {
        bool disjoint = true;
        std::vector<int> seen;
        for (const auto& held : sc.all)
            for (int g : held) {
                if (std::find(seen.begin(), seen.end(), g) != seen.end()) disjoint = false;
                seen.push_back(g);
            }
        if (disjoint) {
            r.task_gpus = sc.all;
            return make_plan(node_, r);
        }
    }
    return plan_around_held(node_, plan_, task, sc.gpus).value_or(plan_);
}

// The plan the task's action is made from: around the GPUs Slurm gave it
// (slurm_devices) when they are not the planned ones; nothing: the plan stands.
std::optional<Plan> StepBinding::plan_for(int task, const SlurmDevices& d) const {
    if (d.from == SlurmDevices::From::OwnCgroup && !d.gpus.empty()) return scoped_plan(task, d);
    if (d.from == SlurmDevices::From::Kept) return plan_around_held(node_, plan_, task, d.gpus);
    return std::nullopt;
}

TaskEnvOptions StepBinding::env_options(const SlurmDevices& d) const {
    TaskEnvOptions eo;
    eo.isolate = options_.isolate;
    eo.share = options_.share;
    eo.step_gpus = inputs_.gpus;
    eo.relative_numbering = inputs_.relative_numbering;
    eo.omp_per_thread = inputs_.cpus_per_task > 0;
    if (d.from == SlurmDevices::From::OwnCgroup && !d.gpus.empty()) {
        // The task's own device cgroup: it sees its GPUs as 0..k-1, never another task's.
        eo.isolate = true;
        eo.share = false;
        eo.step_gpus = d.gpus;
        eo.relative_numbering = true;
    }
    return eo;
}

TaskAction StepBinding::task(int task, const Getenv& current, const CpuSet* task_affinity,
                              std::optional<int> openable) const {
    if (task < 0 || static_cast<size_t>(task) >= plan_.tasks.size())
        throw PlanError("local task " + std::to_string(task) + " is not in this node's plan of " +
                        std::to_string(plan_.tasks.size()) + " task(s)");
    TaskAction a;
    const SlurmDevices held = slurm_devices(node_, inputs_, device_rule(), task, current, task_affinity, openable);
    const TaskEnvOptions eo = env_options(held);
    const std::optional<Plan> around = plan_for(task, held);
    const Plan& use = around ? *around : plan_;
    a.wanted = task_env(node_, use, task, eo);
    keep_slurm_devices(use, task, eo, inputs_, held, a.wanted, a);
    if (!inputs_.gpus.empty() && inputs_.device_ids.empty())
        a.wanted.push_back({env::kStepGpus, join_ints(inputs_.gpus), false});
    const TaskBinding& b = use.tasks.at(static_cast<size_t>(task));
    bind_cpus(use, b, task_affinity, a);
    ResolvedEnv r = keep_user_values(a.wanted, current);
    a.set = std::move(r.set);
    a.kept = std::move(r.kept);
    if (!b.gpus.empty() && planned_visibility(held)) a.visible = visible_gpus(use, task, eo);
    a.verbose_line = verbose_line(node_name_, task, b, a);
    if (task == 0) task_notes(use, held, a);
    return a;
}

// The task's CPUs and memory: gputopo's plan in place of Slurm's automatic
// binding; nothing for --cpu-bind=none; the user's own binding kept, with its
// memory on its CPUs' NUMA nodes.
void StepBinding::bind_cpus(const Plan& use, const TaskBinding& b, const CpuSet* task_affinity, TaskAction& a) const {
    a.cpus = b.cpus;
    a.mems = b.mems;
    if (inputs_.cpu_request == CpuBindRequest::None) {
        a.cpus = CpuSet();
        a.mems.clear();
        drop(a.wanted, env::kCpus);
        drop(a.wanted, env::kMems);
        drop_omp(a.wanted);
        a.skip_reason = "CPUs and memory not bound: --cpu-bind=" + inputs_.user_cpu_bind;
        return;
    }
    if (inputs_.cpu_request == CpuBindRequest::User) {
        a.user_bound = true;
        drop(a.wanted, env::kCpus);
        drop(a.wanted, env::kMems);
        drop_omp(a.wanted);  // the places are the user's binding's, not gputopo's plan
        a.cpus = task_affinity ? *task_affinity : CpuSet();
        a.mems = cpus_on_host_ && task_affinity ? numa_nodes_of(node_, *task_affinity) : std::vector<int>{};
        if (!a.cpus.empty()) a.wanted.push_back({env::kCpus, a.cpus.to_list(), false});
        if (!a.mems.empty()) a.wanted.push_back({env::kMems, join_ints(a.mems), false});
        a.apply_memory = !a.mems.empty();
        if (a.apply_memory) a.mempolicy = memory_policy(options_, a.mems);
        a.skip_reason = "affinity: kept the user's --cpu-bind=" + inputs_.user_cpu_bind +
                        (a.apply_memory ? "; memory on its CPUs' NUMA node(s)" : "");
        return;
    }
    if (a.cpus.empty()) return;
    if (!cpus_on_host_) {
        drop_omp(a.wanted);
        a.skip_reason = "affinity not applied: the topology's CPUs (" + node_.cpus.to_list() + ") are not this host's";
        return;
    }
    a.apply_affinity = true;
    a.mempolicy = memory_policy(options_, a.mems);
    // What is in force now, for SLURM_CPU_BIND's readers (and --cpu-bind=verbose).
    std::vector<std::string> masks;
    for (const TaskBinding& t : use.tasks) masks.push_back(hex_mask(t.cpus));
    const std::string list = join_strings(masks);
    const bool verbose = inputs_.cpu_bind.rfind("verbose", 0) == 0;
    a.cpu_bind_vars = {{env::kSlurmCpuBind, std::string(verbose ? "verbose" : "quiet") + ",mask_cpu:" + list, false},
                       {env::kSlurmCpuBindType, "mask_cpu:", false},
                       {env::kSlurmCpuBindList, list, false}};
}

void StepBinding::task_notes(const Plan& use, const SlurmDevices& sc, TaskAction& a) const {
    for (const auto& f : nic_fallbacks(node_)) a.notes.push_back(node_name_ + ": " + describe(f));
    for (const auto& w : unnamed_nic_warnings(node_, plan_)) a.warnings.push_back(node_name_ + ": " + w);
    if (sc.step_scope)
        a.notes.push_back(node_name_ + ": Slurm binds GPUs per task (SLURMD_TRES_BIND=" + sc.bind +
                          ") but each task can open the step's GPUs (--gres-flags=allow-task-sharing): "
                          "they are numbered in the step's set and follow the plan");
    if (sc.from != SlurmDevices::From::OwnCgroup) return;
    bool moved = false;
    for (size_t t = 0; t < use.tasks.size() && t < plan_.tasks.size(); ++t)
        if (use.tasks[t].gpus != plan_.tasks[t].gpus) moved = true;
    if (moved)
        a.notes.push_back(node_name_ + ": Slurm gives each task its own GPUs (ConstrainDevices, SLURMD_TRES_BIND=" +
                          sc.bind + "): tasks are bound around the GPUs they hold");
    if (sc.gpus.empty()) a.warnings.push_back(node_name_ + ": " + a.kept_note);
    // Ranks that would share GPUs (share) or talk over NVLink (island): one line per node.
    if (use.tasks.size() > 1 && (options_.share || options_.mode == Mode::Island))
        a.warnings.push_back(node_name_ + ": " +
                             per_task_cgroup_sharing_advice(options_.share ? "share" : "island", built_slurm_version()));
}

}  // namespace gputopo::step
