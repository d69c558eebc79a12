#include "launcher/binding.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "launcher/framework_env.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "launcher/topology/load_node.hpp"

namespace gputopo::launch {

namespace {

std::vector<int> parse_gpu_list(const std::string& name, const std::string& v) {
    std::vector<int> out;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item.empty()) continue;
        for (char c : item)
            if (c < '0' || c > '9')
                throw ParseError("gputopo: " + name + "='" + v + "': expected GPU indices such as 0,1,2");
        if (item.size() > 6) throw ParseError("gputopo: " + name + "='" + v + "': expected GPU indices such as 0,1,2");
        out.push_back(std::stoi(item));
    }
    return out;
}

}  // namespace

// Linked in (unit tests) or not (the launcher): then found with dlopen.
extern "C" int gputopo_launch_load_node(const char*, gputopo::Node*, std::string*) __attribute__((weak));

std::string topology_module_path() {
    if (const char* e = std::getenv("GPUTOPO_LAUNCH_TOPOLOGY_MODULE"); e && *e) return e;
    char buf[PATH_MAX] = {0};
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    std::string dir = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
    dir = dir.substr(0, dir.rfind('/'));
    const char* kName = "gputopo-launch-topology.so";
    for (const std::string& c : {dir + "/" + kName, dir + "/../lib/gputopo/" + kName})
        if (access(c.c_str(), R_OK) == 0) return c;
    return dir + "/../lib/gputopo/" + kName;
}

Node load_node(const std::string& path) {
    using Fn = int (*)(const char*, Node*, std::string*);
    Fn fn = gputopo_launch_load_node;
    if (!fn) {
        std::string module = topology_module_path();
        void* h = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) throw TopologyError("gputopo: cannot load the topology module " + module + " (" + dlerror() + ")");
        fn = reinterpret_cast<Fn>(dlsym(h, "gputopo_launch_load_node"));
        if (!fn) throw TopologyError("gputopo: " + module + " has no gputopo_launch_load_node");
    }
    Node node;
    std::string error;
    if (fn(path.c_str(), &node, &error) != 0) throw TopologyError(error);
    return node;
}

bool host_cpus_contain(const CpuSet& cpus) {
    std::ifstream in("/sys/devices/system/cpu/online");
    std::string text;
    CpuSet host;
    if (in && std::getline(in, text)) {
        try {
            host = CpuSet::parse_list(text);
        } catch (const std::exception&) {
        }
    }
    if (host.empty()) {
        long n = sysconf(_SC_NPROCESSORS_CONF);
        if (n > 0) host = CpuSet::range(0, static_cast<int>(n) - 1);
    }
    return !host.empty() && host.contains(cpus);
}

BindingInputs binding_inputs(const Getenv& get) {
    BindingInputs in;
    for (const char* name : {"SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}) {
        auto v = get(name);
        if (v && !v->empty()) {
            in.gpus = parse_gpu_list(name, *v);
            break;
        }
    }
    if (auto step = get("SLURM_STEP_GPUS"), cvd = get("CUDA_VISIBLE_DEVICES"); step && cvd && !step->empty() && *step != *cvd) {
        std::vector<int> seen;
        try {
            seen = parse_gpu_list("CUDA_VISIBLE_DEVICES", *cvd);
        } catch (const ParseError&) {  // UUIDs, MIG ids: not a numbering
        }
        bool zero_based = !seen.empty() && seen.size() == in.gpus.size();
        for (size_t i = 0; zero_based && i < seen.size(); ++i) zero_based = seen[i] == static_cast<int>(i);
        in.relative_numbering = zero_based;
    }
    auto gpt = get("SLURM_GPUS_PER_TASK");
    in.own_gpus_only = gpt && !gpt->empty();
    int local = 0, ntasks = 1;
    if (auto v = get("SLURM_LOCALID"); v && !v->empty()) local = std::stoi(*v);
    auto tpn = get("SLURM_STEP_TASKS_PER_NODE");
    if (!tpn) tpn = get("SLURM_TASKS_PER_NODE");
    auto nodeid = get("SLURM_NODEID");
    if (tpn && nodeid && !nodeid->empty()) ntasks = tasks_on_node(*tpn, std::stoi(*nodeid));
    if (in.own_gpus_only) {
        in.ntasks = 1;
        in.task = 0;
    } else {
        in.ntasks = ntasks < 1 ? 1 : ntasks;
        in.task = local < in.ntasks ? local : 0;
    }
    return in;
}

std::string expand_topology_path(const std::string& p, const std::string& node, const std::string& host) {
    std::string out;
    for (size_t i = 0; i < p.size(); ++i) {
        if (p[i] == '%' && i + 1 < p.size() && (p[i + 1] == 'n' || p[i + 1] == 'h')) {
            out += p[i + 1] == 'n' ? node : host;
            ++i;
        } else {
            out += p[i];
        }
    }
    return out;
}

BindingOutcome binding_for(const Node& node, const BindingInputs& in, const std::string& gpu_topo,
                           const std::optional<CpuSet>& usable_cpus) {
    BindingOutcome b;
    std::string mode_text = gpu_topo.substr(0, gpu_topo.find(','));
    PlanRequest req;
    req.mode = parse_mode(mode_text);
    req.gpus = in.gpus;
    req.ntasks = in.ntasks;
    // The task's CPUs bound the plan only when the topology describes this
    // host (its CPUs exist here); a fixture topology is planned whole.
    if (usable_cpus && !usable_cpus->empty() && !node.cpus.empty() && host_cpus_contain(node.cpus)) {
        CpuSet a = *usable_cpus & node.cpus;
        if (!a.empty()) req.allowed_cpus = a;
    }
    Plan plan = make_plan(node, req);
    TaskEnvOptions teo;
    teo.isolate = gpu_topo.find(",isolate") != std::string::npos || in.own_gpus_only;
    teo.share = gpu_topo.find(",share") != std::string::npos;
    teo.step_gpus = in.gpus;
    teo.relative_numbering = in.relative_numbering;
    b.env = task_env(node, plan, in.task, teo);
    b.mode = mode_name(plan.mode);
    b.bound = plan.mode != Mode::None;
    const TaskBinding& t = plan.tasks.at(static_cast<size_t>(in.task));
    std::ostringstream s;
    s << "gpus=" << join_ints(t.gpus) << " cpus=" << (t.cpus.empty() ? "-" : t.cpus.to_list())
      << " mems=" << (t.mems.empty() ? "-" : join_ints(t.mems)) << " nic=" << (t.nics.empty() ? "-" : t.nics.front())
      << " island=" << t.island;
    b.summary = s.str();
    if (!t.cpus.empty()) {
        if (usable_cpus && usable_cpus->contains(t.cpus)) b.cpus = t.cpus;
        else b.note = "planned CPUs " + t.cpus.to_list() + " are not all usable here; CPU affinity not applied";
    }
    return b;
}

BindingOutcome compute_binding(const Options& o, const Getenv& get) {
    BindingOutcome b;
    if (auto m = get(env::kMode); m && !m->empty()) {
        b.note = "bound by the gputopo plugin (GPUTOPO_MODE=" + *m + ")";
        return b;
    }
    if (o.gpu_topo.rfind("none", 0) == 0) {
        b.note = "binding off (--gpu-topo none)";
        return b;
    }
    try {
        BindingInputs in = binding_inputs(get);
        // Outside Slurm with no GPU list anywhere (launcher/rank_sources): all the node's GPUs.
        const bool all_gpus = in.gpus.empty() && !get("SLURM_JOB_ID") && !get("SLURM_STEP_GPUS");
        if (in.gpus.empty() && !all_gpus) {
            b.note = "no GPUs in this step; nothing to bind";
            return b;
        }
        char host[256] = {0};
        gethostname(host, sizeof host - 1);
        std::string node_name = get("SLURMD_NODENAME").value_or(host);
        Node node = load_node(o.topology.empty() ? "" : expand_topology_path(o.topology, node_name, host));
        if (all_gpus)
            for (const auto& g : node.gpus) in.gpus.push_back(g.index);
        std::optional<CpuSet> usable;
        cpu_set_t mask;
        CPU_ZERO(&mask);
        if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
            CpuSet s;
            for (int i = 0; i < CPU_SETSIZE; ++i)
                if (CPU_ISSET(i, &mask)) s.set(i);
            usable = s;
        }
        return binding_for(node, in, o.gpu_topo, usable);
    } catch (const std::exception& e) {
        BindingOutcome u;
        std::string what = e.what();
        if (what.rfind("gputopo: ", 0) == 0) what = what.substr(9);
        u.note = "cannot compute the binding (" + what + "); running unbound";
        return u;
    }
}

}  // namespace gputopo::launch
