#include "launcher/env/binding.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "launcher/env/framework_env.hpp"
#include "launcher/ranks/rank_sources.hpp"
#include "step/apply.hpp"
#include "step/device_probe.hpp"
#include "step/device_scope.hpp"
#include "step/gpu_ids.hpp"
#include "step/topology_path.hpp"
#include "step/step_inputs.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/host.hpp"
#include "topo/core/strings.hpp"
#include "topo/fabric/rank_order.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/plan/omp_env.hpp"

namespace gputopo::launch {

namespace {

// The tasks on node `node_id` by `text` (Slurm's "2(x3),1"), from 1 to kMaxLocalTasks.
int local_task_count(const char* var, const std::string& text, long long node_id) {
    const std::string shown = printable(text.size() > 60 ? text.substr(0, 60) + "..." : text);
    uint64_t n = 0;
    try {
        n = TaskCounts::parse(text).at(static_cast<uint64_t>(node_id));
    } catch (const ParseError& e) {
        throw ParseError(std::string(var) + ": " + e.what());
    } catch (const std::out_of_range&) {
        throw ParseError(std::string(var) + "='" + shown + "' does not reach node index " + std::to_string(node_id) +
                         " (SLURM_NODEID; expected Slurm's form such as 2(x3),1 covering the node)");
    }
    if (n > static_cast<uint64_t>(kMaxLocalTasks))
        throw ParseError(std::string(var) + "='" + shown + "': " + std::to_string(n) + " tasks on node index " +
                         std::to_string(node_id) + " (expected at most " + std::to_string(kMaxLocalTasks) + ")");
    return std::max(1, static_cast<int>(n));
}

// The position of each of `own` in `step`, or nullopt when one is missing.
std::optional<std::vector<int>> positions(const std::vector<int>& own, const std::vector<int>& step) {
    std::vector<int> out;
    for (int g : own) {
        size_t i = 0;
        while (i < step.size() && step[i] != g) ++i;
        if (i == step.size()) return std::nullopt;
        out.push_back(static_cast<int>(i));
    }
    return out;
}

}  // namespace

TaskPlace task_place(const Getenv& get, const std::string& host) {
    TaskPlace p;
    p.local_id = static_cast<int>(env_number(get, env::kSlurmLocalid, kMaxLocalTasks - 1, 0));
    const char* tpn_var = env::kSlurmStepTasksPerNode;
    auto tpn = get(tpn_var);
    if (!tpn) tpn = get(tpn_var = env::kSlurmTasksPerNode);
    const long long node_id = env_number(get, env::kSlurmNodeid, kMaxWorld, -1);
    if (tpn && !tpn->empty() && node_id >= 0) p.local_tasks = local_task_count(tpn_var, *tpn, node_id);
    if (p.local_id >= p.local_tasks) p.local_tasks = p.local_id + 1;
    if (auto v = get(env::kSlurmdNodename); v && !v->empty()) p.node_name = *v;
    else p.node_name = step::slurm_node_name(get, static_cast<int>(node_id), host);
    return p;
}

TaskPlace read_task_place(const Getenv& get, const std::string& host) {
    try {
        return task_place(get, host);
    } catch (const ParseError& e) {
        TaskPlace p;
        p.problem = e.what();
        return p;
    }
}

step::Getenv step_environment(const Getenv& task_env, const std::vector<int>& step_gpus) {
    // How Slurm numbered this task's devices: as its SLURM_STEP_GPUS (GPU
    // indices), or by position in the step's set (cgroup ConstrainDevices).
    std::vector<int> own;
    if (auto v = task_env(env::kSlurmStepGpus); v && !v->empty()) own = step::parse_index_list(*v, env::kSlurmStepGpus);
    std::vector<int> relative(step_gpus.size());
    for (size_t i = 0; i < relative.size(); ++i) relative[i] = static_cast<int>(i);
    auto renumber = [own, step_gpus, relative](const std::optional<std::string>& v) -> std::optional<std::string> {
        if (!v || v->empty()) return v;
        std::vector<int> seen;
        try {
            seen = step::parse_index_list(*v, env::kCudaVisibleDevices);
        } catch (const ParseError&) {
            return v;  // UUIDs or other names: as Slurm gave them
        }
        if (seen == own) return join_ints(step_gpus);
        if (auto pos = positions(own, step_gpus); pos && seen == *pos) return join_ints(relative);
        return v;
    };
    return [task_env, step_gpus, renumber](const std::string& name) -> std::optional<std::string> {
        if (name == env::kSlurmStepGpus) return join_ints(step_gpus);
        if (name == env::kCudaVisibleDevices || name == env::kRocrVisibleDevices) return renumber(task_env(name));
        return task_env(name);
    };
}

std::string binding_skipped(const step::Options& opt, const Getenv& task_env, bool ranked) {
    // A process torchrun (or another rank source) started inherits the plugin's
    // binding of the whole task (every worker's GPUs): it binds itself.
    if (auto m = task_env(env::kMode); m && !m->empty() && !ranked)
        return "bound by the gputopo plugin (GPUTOPO_MODE=" + *m + ")";
    if (opt.mode == Mode::None) return "binding off (--gpu-topo none)";
    if (ranked) return "";
    // The plugin binds srun's steps only (not batch scripts, not outside Slurm).
    if (auto s = task_env(env::kSlurmStepId); !s || s->empty())
        return "not in a Slurm job step (SLURM_STEP_ID unset) and no other rank source; nothing to bind";
    return "";
}

WorkerView worker_view(const Getenv& task_env, const Node& node, int local_tasks) {
    WorkerView w;
    std::map<std::string, std::optional<std::string>> over;  // laid over task_env (nullopt: hidden)
    // Slurm's -c is the task's: torchrun's workers (GROUP_RANK, LOCAL_WORLD_SIZE) share it.
    // (mpirun's ranks in a batch script are Slurm's tasks by count: -c is each one's.)
    const bool torchrun = task_env("GROUP_RANK") && task_env("LOCAL_WORLD_SIZE");
    if (auto c = task_env(env::kSlurmCpusPerTask); torchrun && c && local_tasks > 1 && !c->empty() && c->size() <= 6 &&
                                                   c->find_first_not_of("0123456789") == std::string::npos)
        over[env::kSlurmCpusPerTask] = std::to_string(std::max(1L, std::stol(*c) / local_tasks));
    const auto mode = task_env(env::kMode);
    const auto cpus = task_env(env::kCpus);
    if (mode && !mode->empty() && cpus && !cpus->empty() && cpus->size() < 4096) {
        try {
            const CpuSet task = CpuSet::parse_list(*cpus);
            if (!task.empty()) w.task_cpus = task;
            // The plugin's OMP_* for the whole task, by its rule (step_binding: one place per CPU
            // with -c, else per core); where OMP_PLACES is still the plugin's, those unchanged are too.
            const bool per_thread = step::read_step_inputs(task_env).cpus_per_task > 0;
            const std::vector<EnvVar> plugin = omp_env(node, task, per_thread);
            const bool places = std::any_of(plugin.begin(), plugin.end(), [&](const EnvVar& v) {
                return v.name == env::kOmpPlaces && task_env(v.name) == v.value;
            });
            for (const EnvVar& v : plugin)
                if (places && task_env(v.name) == v.value) {
                    over[v.name] = std::nullopt;
                    w.hidden.push_back(v.name);
                }
        } catch (const std::exception&) {
            w.task_cpus.reset();  // not a CPU list: the process's affinity stands
            w.hidden.clear();
            for (const char* name : {env::kOmpPlaces, env::kOmpNumThreads, env::kOmpProcBind}) over.erase(name);
        }
    }
    if (over.empty()) {
        w.env = task_env;
        return w;
    }
    w.env = [task_env, over](const std::string& name) -> std::optional<std::string> {
        if (auto it = over.find(name); it != over.end()) return it->second;
        return task_env(name);
    };
    return w;
}

Getenv with_node_gpus(const Getenv& task_env, const Node& node) {
    if (auto j = task_env(env::kSlurmJobId); j && !j->empty()) return task_env;
    if (!step::read_step_inputs(task_env).gpus.empty()) return task_env;
    std::vector<int> all;
    for (const auto& g : node.gpus) all.push_back(g.index);
    const std::string list = join_ints(all);
    return [task_env, list](const std::string& name) -> std::optional<std::string> {
        if (name == env::kSlurmStepGpus) return list;
        return task_env(name);
    };
}

step::Getenv constrained_step_environment(const Getenv& task_env, const std::vector<int>& step_gpus) {
    std::vector<int> relative(step_gpus.size());
    for (size_t i = 0; i < relative.size(); ++i) relative[i] = static_cast<int>(i);
    const std::string physical = join_ints(step_gpus), local = join_ints(relative);
    return [task_env, physical, local](const std::string& name) -> std::optional<std::string> {
        if (name == env::kSlurmStepGpus) return physical;
        if (name == env::kCudaVisibleDevices || name == env::kRocrVisibleDevices) return local;
        return task_env(name);
    };
}

std::optional<std::vector<int>> constrained_step_gpus(const Getenv& get, const Node& node, std::string& why) {
    auto list = [](const std::optional<std::string>& v, const char* var) -> std::optional<std::vector<int>> {
        if (!v || v->empty()) return std::nullopt;
        return step::parse_index_list(*v, var);
    };
    if (auto v = list(get(env::kStepGpus), env::kStepGpus)) return v;
    const std::optional<std::string> on_node = get(env::kSlurmGpusOnNode);
    const long count = on_node && !on_node->empty() && on_node->size() < 6 &&
                               on_node->find_first_not_of("0123456789") == std::string::npos
                           ? std::stol(*on_node)
                           : -1;
    if (count > 0 && static_cast<size_t>(count) == node.gpus.size()) {
        std::vector<int> all;
        for (const auto& g : node.gpus) all.push_back(g.index);
        return all;
    }
    if (auto nodes = get(env::kSlurmJobNumNodes); nodes && *nodes == "1")
        if (auto v = list(get(env::kSlurmJobGpus), env::kSlurmJobGpus); v && static_cast<long>(v->size()) == count)
            return v;
    why = "devices are constrained (ConstrainDevices) and the step holds " +
          (count > 0 ? std::to_string(count) : std::string("some")) + " of this node's " +
          std::to_string(node.gpus.size()) + " GPUs: which ones only the gputopo plugin in the step can say (" +
          env::kStepGpus + ")";
    return std::nullopt;
}

step::TaskAction binding_for(const Node& node, const step::Options& opt, const Getenv& task_env,
                             const TaskPlace& place, bool narrowed, const std::optional<std::vector<int>>& step_gpus,
                             const CpuSet& host_cpus, const CpuSet& affinity, bool constrained,
                             std::optional<int> openable) {
    step::StepSetup setup;
    setup.options = opt;
    setup.node_name = place.node_name;
    setup.host_cpus = host_cpus;
    setup.affinity = affinity;
    int task = place.local_id;
    setup.env = task_env;
    setup.local_tasks = place.local_tasks;
    setup.devices_constrained = constrained;
    setup.per_task_rule = step::built_per_task_rule();
    // Devices named by UUID: the local tasks exchange GPU indices only, so the
    // step's UUIDs are unknown here: the task is planned alone on its own.
    const auto cvd = task_env(env::kCudaVisibleDevices);
    const bool own_uuids = cvd && !step::split_device_uuids(*cvd).empty();
    if (constrained && narrowed && step_gpus && !own_uuids) {
        // Each task's own device cgroup: the step's GPUs as slurmstepd saw them;
        // StepBinding finds this task's share by Slurm's rule.
        setup.env = constrained_step_environment(task_env, *step_gpus);
    } else if (narrowed && step_gpus && !own_uuids) {
        setup.env = step_environment(task_env, *step_gpus);
    } else if (narrowed) {
        // The step's set is unknown: plan this task alone on its own GPUs.
        setup.local_tasks = 1;
        task = 0;
    }
    return step::StepBinding(setup, node).task(task, task_env, &affinity, openable);
}

LaunchBinding compute_binding(const Options& o, const Getenv& task_env, const TaskPlace& place, NodeOnce& node,
                              bool ranked) {
    LaunchBinding b;
    b.note = binding_skipped(o.gpu_topo, task_env, ranked);
    if (!b.note.empty()) return b;
    try {
        // Outside Slurm (launcher/ranks/rank_sources) with no GPU list: all the node's GPUs;
        // inside one Slurm task (torchrun's workers): that task's CPUs and -c, not the parent's.
        const WorkerView worker =
            ranked ? worker_view(with_node_gpus(task_env, node.get()), node.get(), place.local_tasks) : WorkerView{task_env, {}, {}};
        const Getenv& get = worker.env;
        b.replaces = worker.hidden;
        if (!place.problem.empty()) throw ParseError(place.problem);
        const bool constrained = step::slurm_constrains_devices(slurm_config_dir(get));
        const bool per_task = gpus_narrowed(get(env::kSlurmdTresBind));
        const bool narrowed = per_task && (place.local_tasks > 1 || constrained);
        std::optional<std::vector<int>> step_gpus;
        if (narrowed && constrained) {
            // Slurm numbers each task's GPUs 0..k-1 in its own device cgroup:
            // the tasks' own variables name no physical GPU to exchange (and a v1
            // devices.list shows "a *:* rwm" with Slurm's deny rules, v2 has none).
            std::string why;
            step_gpus = constrained_step_gpus(get, node.get(), why);
            if (!step_gpus) {
                b.failed = true;
                b.note = "cannot tell which GPUs this task holds (" + why + "); running unbound";
                return b;
            }
        } else if (narrowed) {
            std::string why;
            std::vector<int> own;
            if (auto v = get(env::kSlurmStepGpus); v && !v->empty()) own = step::parse_index_list(*v, env::kSlurmStepGpus);
            std::string dir = step_gpus_dir(get, place.node_name, o.node_state_dir, why);
            if (!dir.empty()) {
                b.exchange = StepGpusExchange{dir, place.local_id, place.local_tasks, 10, step_identity(get)};
                step_gpus = exchange_step_gpus(*b.exchange, own, why);
            }
            if (!step_gpus)
                b.note = "cannot learn the step's GPUs on this node (" + why +
                         "); this task is planned alone on its own GPUs";
        }
        std::optional<int> openable;
        if (constrained && per_task)
            openable = step::openable_gpu_count(
                o.devices.empty() ? o.devices : step::expand_path(o.devices, place.node_name, host_name()));
        b.action = binding_for(node.get(), o.gpu_topo, get, place, narrowed, step_gpus, step::online_cpus(),
                               worker.task_cpus ? *worker.task_cpus : step::current_affinity(), constrained, openable);
        b.bound = true;
    } catch (const std::exception& e) {
        b.bound = false;
        b.failed = true;
        b.replaces.clear();
        b.note = std::string("cannot compute the binding (") + e.what() + "); running unbound";
    }
    return b;
}

}  // namespace gputopo::launch
