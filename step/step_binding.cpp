#include "step/step_binding.hpp"

#include "topo/core/errors.hpp"
#include "topo/sources/nic_state.hpp"

namespace gputopo::step {

PlanRequest plan_request(const StepInputs& in, int local_tasks, Mode mode, const std::optional<CpuSet>& allowed) {
    PlanRequest r;
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
    cpus_on_host_ = topology_cpus_on_host(node_, setup.host_cpus);
    plan_ = make_plan(node_, plan_request(inputs_, setup.local_tasks, options_.mode,
                                          allowed_cpus(node_, setup.host_cpus, setup.affinity)));
}

namespace {

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
    for (const auto& k : a.kept) line += " (kept user's " + k.name + "=" + k.value + ")";
    if (!a.skip_reason.empty()) line += " (" + a.skip_reason + ")";
    return line;
}

}  // namespace

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
    a.wanted = task_env(node_, plan_, task, eo);
    ResolvedEnv r = keep_user_values(a.wanted, current);
    a.set = std::move(r.set);
    a.kept = std::move(r.kept);
    const TaskBinding& b = plan_.tasks.at(static_cast<size_t>(task));
    if (!b.gpus.empty()) a.visible = visible_gpus(plan_, task, eo);
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
