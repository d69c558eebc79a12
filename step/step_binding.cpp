#include "step/step_binding.hpp"

#include <algorithm>

#include "step/gpu_ids.hpp"
#include "step/user_gpu_bind.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/sources/nic_state.hpp"

namespace gputopo::step {

PlanRequest plan_request(const StepInputs& in, int local_tasks, Mode mode, const std::optional<CpuSet>& allowed,
                         bool whole_cores) {
    PlanRequest r;
    r.whole_cores = whole_cores;
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
    cpus_on_host_ = topology_cpus_on_host(node_, setup.host_cpus);
    plan_ = make_plan(node_, plan_request(inputs_, setup.local_tasks, options_.mode,
                                          allowed_cpus(node_, setup.host_cpus, setup.affinity), options_.whole_cores));
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

// The devices Slurm gave this task, when gputopo keeps them rather than
// choose: the user's --gpu-bind, or devices named by UUID. `gpus`: their GPU
// indices (empty: unknown); `ids`: the UUIDs (empty: indices).
struct Kept {
    bool active = false;
    std::vector<int> gpus;
    std::vector<std::string> ids;
    std::vector<int> id_parents;
};

// Slurm's GPUs are kept as it set them in each task: the user's --gpu-bind,
// or devices named by UUID.
bool keeps_slurm_gpus(const StepInputs& in) { return !in.gpu_bind.empty() || !in.device_ids.empty(); }

Kept kept_devices(const Node& node, const StepInputs& in, const Getenv& current) {
    Kept k;
    if (!keeps_slurm_gpus(in)) return k;
    k.active = true;
    if (!in.device_ids.empty()) {
        // The task's own UUIDs (Slurm narrows them per task), else the step's.
        auto cvd = current(env::kCudaVisibleDevices);
        k.ids = cvd ? split_device_uuids(*cvd) : std::vector<std::string>{};
        if (k.ids.empty()) k.ids = in.device_ids;
        if (auto parents = parent_gpus(node, k.ids, nullptr)) {
            k.id_parents = *parents;
            k.gpus = *parents;
            std::sort(k.gpus.begin(), k.gpus.end());
            k.gpus.erase(std::unique(k.gpus.begin(), k.gpus.end()), k.gpus.end());
        }
        return k;
    }
    k.gpus = task_gpus_from_slurm(current, in);
    for (int g : k.gpus)
        if (!node.gpu(g)) k.gpus.clear();
    return k;
}

// When the plan did not give this task the GPUs Slurm kept for it: a copy of
// the plan whose task holds the binding around the kept GPUs (CPUs, memory,
// NIC of those GPUs). Otherwise nothing: the plan stands.
std::optional<Plan> plan_around_kept(const Node& node, const Plan& plan, int task, const Kept& kept) {
    const TaskBinding& planned = plan.tasks.at(static_cast<size_t>(task));
    if (kept.gpus.empty() || (!planned.gpus.empty() && subset(planned.gpus, kept.gpus))) return std::nullopt;
    PlanRequest r;
    r.gpus = kept.gpus;
    r.mode = plan.mode;
    Plan around = plan;
    TaskBinding b = make_plan(node, r).tasks.at(0);
    b.task = task;
    around.tasks[static_cast<size_t>(task)] = b;
    return around;
}

// Slurm's UUIDs in the planned order. Shared view: position i holds an
// instance of task i's GPU, then the rest by planned visibility.
std::vector<std::string> planned_id_order(const Plan& plan, int task, const TaskEnvOptions& eo, const Kept& kept) {
    std::vector<int> order;
    if (!task_isolated(plan, task, eo))
        for (const TaskBinding& t : plan.tasks)
            if (!t.gpus.empty()) order.push_back(t.gpus.front());
    for (int g : visible_gpus(plan, task, eo)) order.push_back(g);
    return order_ids(kept.ids, kept.id_parents, order);
}

// The task's GPU variables when Slurm's devices are kept: CUDA/ROCR
// variables dropped from `wanted`, the UUIDs reordered (set in `wanted`) or
// a note saying why they stay as Slurm set them.
void keep_slurm_devices(const Plan& plan, int task, const TaskEnvOptions& eo, const StepInputs& in,
                        const Kept& kept, std::vector<EnvVar>& wanted, TaskAction& a) {
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

std::string verbose_line(const std::string& node_name, int task, const TaskBinding& b, const TaskAction& a) {
    std::string line = node_name + " task " + std::to_string(task) + ":";
    line += " gpus=" + (b.gpus.empty() ? std::string("none") : join_ints(b.gpus));
    if (!b.gpu_pci.empty()) {
        std::vector<std::string> pci;
        for (const auto& p : b.gpu_pci) pci.push_back(p.to_string());
        line += " (" + join_strings(pci) + ")";
    }
    line += " cpus=" + (b.cpus.empty() ? std::string("any") : b.cpus.to_list());
    line += " mems=" + (b.mems.empty() ? std::string("any") : join_ints(b.mems));
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

bool StepBinding::task_reads_own_gpus() const { return keeps_slurm_gpus(inputs_); }

TaskAction StepBinding::task(int task, const Getenv& current) const {
    if (task < 0 || static_cast<size_t>(task) >= plan_.tasks.size())
        throw PlanError("local task " + std::to_string(task) + " is not in this node's plan of " +
                        std::to_string(plan_.tasks.size()) + " task(s)");
    TaskAction a;
    TaskEnvOptions eo;
    eo.isolate = options_.isolate;
    eo.share = options_.share;
    eo.step_gpus = inputs_.gpus;
    eo.relative_numbering = inputs_.relative_numbering;
    const Kept kept = kept_devices(node_, inputs_, current);
    const std::optional<Plan> around = plan_around_kept(node_, plan_, task, kept);
    const Plan& use = around ? *around : plan_;
    a.wanted = task_env(node_, use, task, eo);
    if (kept.active) keep_slurm_devices(use, task, eo, inputs_, kept, a.wanted, a);
    ResolvedEnv r = keep_user_values(a.wanted, current);
    a.set = std::move(r.set);
    a.kept = std::move(r.kept);
    const TaskBinding& b = use.tasks.at(static_cast<size_t>(task));
    if (!b.gpus.empty() && !kept.active) a.visible = visible_gpus(use, task, eo);
    a.cpus = b.cpus;
    a.mems = b.mems;
    if (!a.cpus.empty()) {
        if (!cpus_on_host_)
            a.skip_reason = "affinity not applied: the topology's CPUs (" + node_.cpus.to_list() +
                            ") are not this host's";
        else if (inputs_.user_cpu_bind) {
            a.user_bound = true;
            a.skip_reason = "affinity not applied: kept the user's --cpu-bind=" + inputs_.cpu_bind;
        }
        else
            a.apply_affinity = true;
    }
    if (a.apply_affinity) a.mempolicy = memory_policy(options_, a.mems);
    a.verbose_line = verbose_line(node_name_, task, b, a);
    if (task == 0)
        for (const auto& f : nic_fallbacks(node_)) a.notes.push_back(node_name_ + ": " + describe(f));
    return a;
}

}  // namespace gputopo::step
