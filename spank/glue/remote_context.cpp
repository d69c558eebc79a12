// slurmstepd (remote context).
//   init_post_opt (root): with cache= and no topology=, refresh a stale cache.
//   user_init (once per node, before the tasks fork): decide the options, read
//     the topology (topology= file, else the cache, else live discovery), plan.
//   task_init (in each task, before exec): set the environment, CPU affinity
//     and memory policy, print the verbose line.
// Any failure: one warning "gputopo: ..." on the user's stderr (from local task
// 0) and the tasks run unbound; with `strict` the step fails with the message.
extern "C" {
#include <slurm/spank.h>
}

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "spank/glue/state.hpp"
#include "step/task_binding.hpp"
#include "spank/topology_cache.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/sources/nic_state.hpp"
#include "topo/plan/planner.hpp"
#include "topo/fabric/step_islands.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::spank {

namespace {

const char* kJobOptionVars[] = {"SPANK__SLURM_SPANK_OPTION_gputopo_gpu_topo", "_SLURM_SPANK_OPTION_gputopo_gpu_topo"};

std::string host_name() {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    return host;
}

CpuSet online_cpus() {
    std::ifstream f("/sys/devices/system/cpu/online");
    std::string line;
    if (f && std::getline(f, line)) {
        try {
            return CpuSet::parse_list(line);
        } catch (const std::exception&) {
        }
    }
    return CpuSet::range(0, static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)) - 1);
}

CpuSet current_affinity() {
    CpuSet s;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return online_cpus();
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) s.set(i);
    return s;
}

// Messages from the library start with "gputopo: "; we add our own prefix.
std::string without_prefix(const std::string& m) {
    return m.rfind("gputopo: ", 0) == 0 ? m.substr(9) : m;
}

std::optional<std::string> process_getenv(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
}

double micros_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// The options in force: the step's --gpu-topo, else the job's (sbatch/salloc),
// else plugstack.conf's default=.
Options effective_options(spank_t sp, PluginState& st) {
    if (!st.user_option_error.empty()) throw ParseError(st.user_option_error);
    if (st.user_options) return *st.user_options;
    for (const char* var : kJobOptionVars)
        if (auto v = job_getenv(sp, var)) return parse_gpu_topo(*v);
    return st.config.defaults;
}

Node read_topology(PluginState& st) {
    if (!st.config.topology.empty())
        return load_topology_via_snapshot(expand_path(st.config.topology, st.node_name, host_name()), st.config.cache_dir);
    if (!st.config.cache_dir.empty()) return load_cached_topology(st.config.cache_dir, host_name());
    return discover_live();
}

int apply_affinity(const CpuSet& cpus, std::string& why) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus.to_vector()) {
        if (c >= CPU_SETSIZE) {
            why = "CPU " + std::to_string(c) + " is beyond this host's CPU set size";
            return -1;
        }
        CPU_SET(c, &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        why = std::string("sched_setaffinity(") + cpus.to_list() + "): " + std::strerror(errno);
        return -1;
    }
    return 0;
}

// set_mempolicy(MPOL_BIND) on the task's NUMA nodes, when they exist here.
int apply_mempolicy(const std::vector<int>& mems, std::string& why) {
    if (mems.empty()) return 0;
    unsigned long mask[16] = {0};
    const int bits = static_cast<int>(sizeof(unsigned long) * 8);
    for (int m : mems) {
        if (m < 0 || m >= 16 * bits) {
            why = "NUMA node " + std::to_string(m) + " out of range";
            return -1;
        }
        if (access(("/sys/devices/system/node/node" + std::to_string(m)).c_str(), F_OK) != 0) {
            why = "NUMA node " + std::to_string(m) + " does not exist on this host";
            return -1;
        }
        mask[m / bits] |= 1UL << (m % bits);
    }
    const int kMpolBind = 2;
    if (syscall(SYS_set_mempolicy, kMpolBind, mask, static_cast<unsigned long>(16 * bits)) != 0) {
        why = std::string("set_mempolicy: ") + std::strerror(errno);
        return -1;
    }
    return 0;
}

// Slurm ignores a failing `optional` plugin, so `strict` ends the task itself:
// this runs in the forked task, before exec, never in slurmstepd.
[[noreturn]] void fail_task() {
    std::fflush(stderr);
    _exit(1);
}

// Batch script, extern and interactive steps carry ids from 0xfffffffa up:
// they are not bound (their environment would leak into the steps inside).
bool special_step(spank_t sp) {
    uint32_t step = 0;
    if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) return false;
    return step >= 0xfffffffaU;
}

}  // namespace

// Runs as root, before privileges are dropped for user_init: the only place
// the admin-set cache directory can be written. With cache= and no topology=,
// refresh a stale live-discovery cache; with both, read the topology file
// through its snapshot (writing it when missing or stale) for user_init.
int remote_init_post_opt(spank_t sp, int, char**) {
    PluginState& st = state();
    if (!st.config_ok || st.config.cache_dir.empty()) return 0;
    try {
        if (special_step(sp)) return 0;
        if (st.config.topology.empty()) {
            const std::string host = host_name();
            if (!cache_fresh(st.config.cache_dir, host, current_stamp())) refresh_cache(st.config.cache_dir, host);
            return 0;
        }
        if (effective_options(sp, st).mode == Mode::None) return 0;
        uint32_t node_id = 0;
        if (spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS) node_id = 0;
        const std::string node = slurm_node_name([&](const std::string& n) { return job_getenv(sp, n.c_str()); },
                                                 static_cast<int>(node_id), host_name());
        st.preloaded_node = load_topology_via_snapshot(expand_path(st.config.topology, node, host_name()),
                                                       st.config.cache_dir);
        st.preloaded_for = node;
    } catch (const std::exception&) {
        // user_init reads the topology again and reports the problem to the user.
        st.preloaded_node.reset();
    }
    return 0;
}

}  // namespace gputopo::spank

using namespace gputopo;
using namespace gputopo::spank;

extern "C" int slurm_spank_user_init(spank_t sp, int, char**) {
    auto t0 = std::chrono::steady_clock::now();
    try {
        PluginState& st = state();
        if (!st.config_ok) return 0;  // logged by slurm_spank_init
        if (special_step(sp)) return 0;
        try {
            st.effective = effective_options(sp, st);
        } catch (const std::exception& e) {
            st.problem = e.what();
            return 0;
        }
        if (st.effective.mode == Mode::None) return 0;
        uint32_t node_id = 0;
        if (spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS) node_id = 0;
        st.node_name = slurm_node_name([&](const std::string& n) { return job_getenv(sp, n.c_str()); },
                                       static_cast<int>(node_id), host_name());
        try {
            st.inputs = read_step_inputs([&](const std::string& n) { return job_getenv(sp, n.c_str()); });
            uint32_t ntasks = 1;
            if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS) ntasks = 1;
            st.local_tasks = static_cast<int>(ntasks);
            if (st.preloaded_node && st.preloaded_for == st.node_name)
                st.node = std::move(*st.preloaded_node);
            else
                st.node = read_topology(st);
            resolve_step_devices(st.node, st.inputs);  // GPU-/MIG- UUIDs -> their GPUs
            const CpuSet host = online_cpus();
            st.cpus_on_host = topology_cpus_on_host(st.node, host);
            st.plan = make_plan(st.node, plan_request(st.inputs, st.local_tasks, st.effective.mode,
                                                      allowed_cpus(st.node, host, current_affinity())));
            st.planned = true;
        } catch (const std::exception& e) {
            st.problem = e.what();
        }
        if (st.planned && st.effective.mode == Mode::Island) {
            try {  // islands= and/or Slurm's own topology (topo/fabric/slurm_islands.hpp)
                StepIslandMap m = load_step_islands(st.config.islands, slurm_config_dir(process_getenv));
                if (m.sources != "none") st.islands = std::move(m.map);
                st.islands_from = m.sources;
            } catch (const std::exception& e) {
                st.islands_problem = e.what();
            }
        }
        st.plan_us = micros_since(t0);
        return 0;
    } catch (...) {
        return 0;
    }
}

extern "C" int slurm_spank_task_init(spank_t sp, int, char**) {
    auto t0 = std::chrono::steady_clock::now();
    try {
        PluginState& st = state();
        if (!st.planned && st.problem.empty()) return 0;  // inactive
        int task = 0;
        if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS) task = 0;
        const bool strict = st.effective.strict;
        if (!st.planned) {
            if (task == 0) {
                std::string where = st.node_name.empty() ? "" : st.node_name + ": ";
                std::string what = without_prefix(st.problem);
                std::fprintf(stderr, "gputopo: %s%s%s\n", where.c_str(), what.c_str(),
                             strict ? " (strict: the step fails)" : "; tasks run unbound");
            }
            if (strict) fail_task();
            return 0;
        }
        TaskAction a = bind_task(st.node_name, st.node, st.plan, task, st.effective, st.inputs,
                                 [&](const std::string& n) { return job_getenv(sp, n.c_str()); }, st.cpus_on_host);
        // Islands across nodes (islands=, mode island): our GPUTOPO_ISLAND (the
        // cross-node island) replaces the intra-node island id.
        if (st.islands || !st.islands_problem.empty()) {
            std::string problem = st.islands_problem;
            if (st.islands) {
                try {
                    TaskIslands ti = task_islands(*st.islands, st.node_name, st.plan, task,
                                                  [&](const std::string& n) { return job_getenv(sp, n.c_str()); },
                                                  &st.node);
                    for (auto& v : ti.set) a.set.push_back(v);
                    a.verbose_line += ti.verbose;
                    if (!ti.warning.empty() && task == 0) std::fprintf(stderr, "gputopo: %s\n", ti.warning.c_str());
                } catch (const std::exception& e) {
                    problem = e.what();
                }
            }
            if (!problem.empty()) {
                if (task == 0 || st.effective.strict)
                    std::fprintf(stderr, "gputopo: %s: islands: %s%s\n", st.node_name.c_str(),
                                 without_prefix(problem).c_str(),
                                 st.effective.strict ? " (strict: the step fails)" : "; no island variables");
                if (st.effective.strict) fail_task();
            }
        }
        for (const auto& v : a.set) spank_setenv(sp, v.name.c_str(), v.value.c_str(), 1);
        uint32_t global_task = 1;
        if (spank_get_item(sp, S_TASK_GLOBAL_ID, &global_task) != ESPANK_SUCCESS) global_task = 1;
        if (global_task == 0 && st.inputs.gpus.empty() && st.inputs.device_ids.empty())
            std::fprintf(stderr, "gputopo: %s: the step has no GPUs here: CPUs and memory bound only\n",
                         st.node_name.c_str());
        if (task == 0 && !st.inputs.device_problem.empty())
            std::fprintf(stderr, "gputopo: %s: %s\n", st.node_name.c_str(), st.inputs.device_problem.c_str());
        std::string why = a.skip_reason;
        bool failed = !why.empty() && st.cpus_on_host;  // an explicit user binding is not a failure
        if (!st.cpus_on_host && !a.cpus.empty()) failed = true;
        if (a.apply_affinity) {
            std::string e;
            if (apply_affinity(a.cpus, e) != 0 || apply_mempolicy(a.mems, e) != 0) {
                why = "affinity not applied: " + e;
                failed = true;
            }
        }
        if (st.effective.verbose) {
            if (task == 0 && st.islands)
                std::fprintf(stderr, "gputopo: %s: islands from %s\n", st.node_name.c_str(), st.islands_from.c_str());
            if (task == 0)  // once per node: GPUs whose nearest NIC is down, and what they use instead
                for (const auto& f : nic_fallbacks(st.node))
                    std::fprintf(stderr, "gputopo: %s: %s\n", st.node_name.c_str(), describe(f).c_str());
            std::string line = a.verbose_line;
            if (why != a.skip_reason) line += " (" + why + ")";
            std::fprintf(stderr, "%s\n", line.c_str());
        } else if (failed && task == 0) {
            std::fprintf(stderr, "gputopo: %s: %s\n", st.node_name.c_str(), why.c_str());
        }
        if (failed && strict) {
            std::fprintf(stderr, "gputopo: %s task %d: %s (strict: the step fails)\n", st.node_name.c_str(), task,
                         why.c_str());
            fail_task();
        }
        if (auto t = job_getenv(sp, "GPUTOPO_DEBUG_TIMING"); t && *t == "1") {
            double us = micros_since(t0);
            std::fprintf(stderr, "gputopo: %s task %d: plugin time %.1f us (task_init %.1f us + user_init %.1f us / %d tasks)\n",
                         st.node_name.c_str(), task, us + st.plan_us / std::max(1, st.local_tasks), us, st.plan_us,
                         st.local_tasks);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gputopo: %s; task runs unbound\n", without_prefix(e.what()).c_str());
        if (state().effective.strict) fail_task();
        return 0;
    } catch (...) {
        return 0;
    }
}
