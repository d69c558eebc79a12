#include "step/task_binding.hpp"

namespace gputopo::spank {

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

TaskAction bind_task(const std::string& node_name, const Node& node, const Plan& plan, int task,
                     const Options& opt, const StepInputs& in, const Getenv& current, bool cpus_on_host) {
    TaskAction a;
    TaskEnvOptions eo;
    eo.isolate = opt.isolate;
    eo.share = opt.share;
    eo.step_gpus = in.gpus;
    eo.relative_numbering = in.relative_numbering;
    ResolvedEnv r = keep_user_values(task_env(node, plan, task, eo), current);
    a.set = std::move(r.set);
    a.kept = std::move(r.kept);
    const TaskBinding& b = plan.tasks.at(static_cast<size_t>(task));
    if (!b.gpus.empty()) a.visible = visible_gpus(plan, task, eo);
    a.cpus = b.cpus;
    a.mems = b.mems;
    if (!a.cpus.empty()) {
        if (!cpus_on_host)
            a.skip_reason = "affinity not applied: the topology's CPUs (" + node.cpus.to_list() +
                            ") are not this host's";
        else if (in.user_cpu_bind)
            a.skip_reason = "affinity not applied: kept the user's --cpu-bind=" + in.cpu_bind;
        else
            a.apply_affinity = true;
    }

    std::string line = "gputopo: " + node_name + " task " + std::to_string(task) + ":";
    line += " gpus=" + (b.gpus.empty() ? std::string("none") : join_ints(b.gpus));
    if (!b.gpu_pci.empty()) {
        std::vector<std::string> pci;
        for (const auto& p : b.gpu_pci) pci.push_back(p.to_string());
        line += " (" + join_strings(pci) + ")";
    }
    line += " cpus=" + (b.cpus.empty() ? std::string("any") : b.cpus.to_list());
    line += " mems=" + (b.mems.empty() ? std::string("any") : join_ints(b.mems));
    line += " nic=" + (b.nics.empty() ? std::string("none") : join_strings(b.nics));
    line += " island=" + std::to_string(b.island);
    if (!a.visible.empty()) line += " visible=" + join_ints(a.visible);
    for (const auto& k : a.kept) line += " (kept user's " + k.name + "=" + k.value + ")";
    if (!a.skip_reason.empty()) line += " (" + a.skip_reason + ")";
    a.verbose_line = line;
    return a;
}

}  // namespace gputopo::spank
