// slurmstepd (remote context).
//   init_post_opt (root): with cache= and no topology=, refresh a stale cache;
//     with cache= and topology=, read the node's topology through its snapshot
//     (written there as root) for user_init, under a node name slurmstepd's
//     own environment or the host gives, never the job's environment.
//   user_init (as the user, once per node, before the tasks fork): decide the
//     options, read the topology once (the root read above, else topology=,
//     else the cache, else live discovery), plan: one step::StepBinding.
//     Then every task's action, made here before slurmstepd forks the tasks
//     (unless it depends on the task's own environment): a forked task pays a
//     page fault for each page it touches, so it should compute nothing.
//   task_init (in each task, before exec): the task's action (made above, else
//     now from the binding): environment, CPU affinity and memory policy
//     (step/apply.hpp), the verbose line.
// Any failure: one warning "gputopo: ..." on the user's stderr (from local task
// 0) and the tasks run unbound; with `strict` the step fails with the message.
extern "C" {
#include <slurm/spank.h>
}

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "spank/framework_task.hpp"
#include "spank/glue/state.hpp"
#include "step/topology_cache.hpp"
#include "step/apply.hpp"
#include "step/device_probe.hpp"
#include "step/device_scope.hpp"
#include "step/step_binding.hpp"
#include "step/task_ranks.hpp"
#include "step/node_read.hpp"
#include "step/topology_path.hpp"
#include "step/run_bounded.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/host.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/mnnvl.hpp"
#include "topo/sources/nic_policy.hpp"
#include "topo/sources/node_refine.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

namespace gputopo::spank {

namespace {

// One task's action and its affinity and memory policy, ready to apply.
struct TaskWork {
    step::TaskAction action;
    step::PreparedApply apply;
};

// This slurmstepd's state: filled by init_post_opt and user_init, read by
// task_init in the forked tasks. Private to this file.
struct StepdState {
    // What user_init decided: gputopo stays out of the step (Inactive), the step
    // is bound (Bound: `binding`, and `prepared` when made before the fork), or
    // every task runs unbound and says why (Unbound: `problem`).
    enum class Phase { Inactive, Bound, Unbound };
    Phase phase = Phase::Inactive;
    // init_post_opt (root): the node read through the cache's snapshot, and
    // the node name it was read for; user_init takes it when its name agrees.
    std::optional<Node> root_read_node;
    std::string root_read_for;
    step::Options effective;              // the step's options, else the job's, else default=
    std::string node_name;
    std::optional<step::StepBinding> binding;
    std::vector<TaskWork> prepared;       // every local task's work, made before the fork (empty: made in the task)
    std::string problem;                  // why this step runs unbound ("" when fine)
    double root_read_us = 0;              // time init_post_opt spent reading the snapshot
    double plan_us = 0;                   // time user_init spent (read + plan)
    int local_tasks = 0;
    // Island and layout ranks (step/task_ranks.hpp), once per node: the island
    // map, Slurm's rank order (GROUP_RANK, the node of rank 0) and whether
    // island mode keeps Slurm's ranks.
    step::StepRanks ranks;
    std::string master_addr;              // MASTER_ADDR for the framework variables (resolved once per node)
    std::string master_addr_warning;      // why it may not work ("" fine)
};

StepdState& stepd() {
    static StepdState s;
    return s;
}

// The step runs unbound from here on, for `why`.
void become_unbound(StepdState& st, std::string why) {
    st.problem = std::move(why);
    st.binding.reset();
    st.prepared.clear();
    st.phase = StepdState::Phase::Unbound;
}

step::Getenv job_env(spank_t sp) {
    return [sp](const std::string& n) { return job_getenv(sp, n.c_str()); };
}

std::optional<std::string> process_getenv(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
}

double micros_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// The option through the SPANK API (srun's --gpu-topo, as slurmstepd got it).
std::optional<std::string> spank_option_value(spank_t sp) {
    struct spank_option opt;
    std::memset(&opt, 0, sizeof opt);
    std::string name = step::kGpuTopoOption;
    opt.name = name.data();
    opt.has_arg = 1;
    char* arg = nullptr;
    if (spank_option_getopt(sp, &opt, &arg) != ESPANK_SUCCESS || !arg) return std::nullopt;
    return std::string(arg);
}

// The options in force: the step's --gpu-topo, else the job's (sbatch/salloc,
// which reach slurmstepd only through the job's environment), else
// plugstack.conf's default=.
step::Options effective_options(spank_t sp) {
    const SharedConfig& sc = shared();
    if (!sc.user_option_error.empty()) throw ParseError(sc.user_option_error);
    if (auto v = spank_option_value(sp)) return step::parse_gpu_topo(*v);
    if (sc.user_options) return *sc.user_options;
    for (const char* var : kJobOptionVars)
        if (auto v = job_getenv(sp, var)) return step::parse_gpu_topo(*v);
    return sc.config.defaults;
}

// The node name for files root opens: from slurmstepd's own environment
// (SLURMD_NODENAME when the site's slurmd sets it) or this host's name, never
// from the job's environment, which the user controls.
std::string trusted_node_name() {
    if (const char* v = std::getenv(env::kSlurmdNodename); v && *v) return v;
    return host_name();
}

// The node name user_init plans for: the one slurmstepd set in its own
// environment from slurmd's configuration (SLURMD_NODENAME: slurmstepd.c
// main(), Slurm 22.05 through 26.05), else this node's entry in the step's
// node list (S_JOB_NODEID). The node list alone is wrong in a heterogeneous
// step (srun A : B): every component's SLURM_STEP_NODELIST is the union of
// all components' nodes (Slurm's het_job_node_list, sorted), while
// S_JOB_NODEID counts within the component's own nodes, so component 1's
// first node was taken for the union's first. task_init checks the name
// against the SLURMD_NODENAME slurmstepd puts in each task's environment.
std::string step_node_name(spank_t sp) {
    if (const char* v = std::getenv(env::kSlurmdNodename); v && *v) return v;
    uint32_t node_id = 0;
    if (spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS) node_id = 0;
    return step::slurm_node_name(job_env(sp), static_cast<int>(node_id), host_name());
}

// This node for this step, read the one way (step/node_read.hpp) from the
// site's plugstack.conf arguments: a refused cache directory is one line in
// slurmd's log (the node is read without it), an unwritable one a warning.
Node read_topology(const std::string& node_name) {
    step::NodeRead r = step::read_step_node(node_source(shared().config), node_name, host_name());
    if (!r.cache_refused.empty())
        slurm_error("gputopo: %s; reading the topology without the cache", r.cache_refused.c_str());
    if (!r.cache_unwritten.empty()) warn_cache_unwritable(r.cache_unwritten);
    return std::move(r.node);
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

// Every local task's work, before slurmstepd forks the tasks, when it follows
// from the step's environment alone. On any error nothing is prepared: each
// task then makes its own and reports what it meets.
void prepare_tasks(spank_t sp, StepdState& st) {
    const step::StepBinding& b = *st.binding;
    if (b.task_reads_own_gpus()) return;
    try {
        const step::Getenv env = job_env(sp);
        st.prepared.reserve(static_cast<size_t>(st.local_tasks));
        for (int t = 0; t < st.local_tasks; ++t) {
            TaskWork w{b.task(t, env), {}};
            w.apply = step::prepare_apply(w.action);
            st.prepared.push_back(std::move(w));
        }
    } catch (const std::exception&) {
        st.prepared.clear();
    }
}

// Slurm's rank order as this node sees it (step/task_ranks.hpp slurm_order):
// from the lowest rank it holds; unknown when slurmstepd does not say.
step::SlurmOrder slurm_order(spank_t sp) {
    uint32_t node_id = 0, first_rank = 0;
    if (spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, 0U, &first_rank) != ESPANK_SUCCESS)
        return {};
    const step::Getenv base = job_env(sp);
    const std::string id = std::to_string(node_id);
    const step::Getenv env = [base, id](const std::string& n) -> std::optional<std::string> {
        return n == env::kSlurmNodeid ? std::optional<std::string>(id) : base(n);
    };
    try {
        return step::slurm_order(env, first_rank, slurm_config_dir(process_getenv));
    } catch (const std::exception&) {  // unknown: the node list's first node, ranks from the task's own
        return {};
    }
}

// The island map, Slurm's rank order and the keep-Slurm's-ranks decision,
// once per step (step/task_ranks.hpp step_ranks).
void find_ranks(spank_t sp, StepdState& st) {
    step::RanksRequest req;
    req.islands = st.effective.mode == Mode::Island;
    if (req.islands) {
        req.islands_conf = shared().config.islands;
        req.layout = {st.effective.layout, st.effective.nvlink_domain.empty() ? "node" : st.effective.nvlink_domain, ""};
    }
    req.slurm_dir = slurm_config_dir(process_getenv);
    st.ranks = step::step_ranks(req, job_env(sp), slurm_order(sp));
}

// MASTER_ADDR for the framework variables, once per node (bounded: getaddrinfo,
// else the NodeAddr slurm.conf gives, else at most one `scontrol show node`, 5 s each):
// the node that holds rank 0; in island order (RANK = GPUTOPO_RANK) the node
// list's first, which holds island rank 0 (topo/fabric/rank_order.hpp).
void resolve_master(spank_t sp, StepdState& st) {
    if (!st.effective.framework) return;
    try {
        std::string rank0 = step::step_first_node(job_env(sp));
        const step::SlurmNodeOrder& order = st.ranks.slurm.order;
        if ((st.effective.mode != Mode::Island || st.ranks.kept == step::KeptRanks::TopologyOrder) &&
            !order.rank0_node.empty())
            rank0 = order.rank0_node;
        step::MasterAddr m = step::resolve_master_addr(
            rank0,
            [](const std::vector<std::string>& argv, double timeout_s) { return step::run_bounded(argv, timeout_s); },
            5, step::read_local_slurm_conf());
        st.master_addr = m.addr;
        st.master_addr_warning = m.warning;
    } catch (const std::exception& e) {
        st.master_addr_warning = e.what();  // a malformed node list: framework_for_task names it too
    }
}

// user_init's work, for an active step: the binding, its tasks' work, then
// islands, Slurm's rank order and MASTER_ADDR.
void plan_node(spank_t sp, StepdState& st) {
    st.node_name = step_node_name(sp);
    try {
        uint32_t ntasks = 1;
        if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS) ntasks = 1;
        st.local_tasks = static_cast<int>(ntasks);
        step::StepSetup setup;
        setup.env = job_env(sp);
        setup.options = st.effective;
        setup.node_name = st.node_name;
        setup.local_tasks = st.local_tasks;
        setup.host_cpus = step::online_cpus();
        setup.affinity = step::current_affinity();
        setup.devices_constrained = step::slurm_constrains_devices(slurm_config_dir(process_getenv));
        setup.per_task_rule = step::built_per_task_rule();
        Node node;
        if (st.root_read_node && st.root_read_for == st.node_name) node = std::move(*st.root_read_node);
        else node = read_topology(st.node_name);
        st.root_read_node.reset();
        st.binding.emplace(setup, std::move(node));
        st.phase = StepdState::Phase::Bound;
    } catch (const std::exception& e) {
        become_unbound(st, e.what());
        st.ranks.slurm = slurm_order(sp);  // the tasks still get the framework variables
        resolve_master(sp, st);
        return;
    }
    prepare_tasks(sp, st);
    find_ranks(sp, st);
    resolve_master(sp, st);
}

void say(const std::string& line) { std::fprintf(stderr, "gputopo: %s\n", line.c_str()); }

// Island and layout ranks (step/task_ranks.hpp task_ranks, the launcher's
// path too): islands across nodes (islands=, mode island): our GPUTOPO_ISLAND
// (the cross-node island) replaces the intra-node island id;
// --gpu-topo=island,tp=..: GPUTOPO_RANK (and GPUTOPO_NODE_RANK) from the layout
// placement replace the island order's; RANK, ROLE_RANK, GROUP_RANK, NODE_RANK
// follow them in framework_for_task. Said here: a layout that does not fit the
// step (RANK stays SLURM_PROCID), Slurm's ranks kept, islands that cannot be
// read (no island variables); `strict` fails the task on a problem.
void add_ranks(spank_t sp, const StepdState& st, int task, step::TaskAction& a) {
    const step::StepRanks& r = st.ranks;
    if (!r.islands && r.problem.empty()) return;
    const step::TaskRanks t =
        step::task_ranks(r, st.node_name, st.binding->plan(), task, job_env(sp), &st.binding->node());
    const bool strict = st.effective.strict;
    if (!t.problem.empty()) {
        if (task == 0 || strict)
            say(st.node_name + ": islands: " + t.problem + (strict ? " (strict: the step fails)" : "; no island variables"));
        if (strict) fail_task();
        return;
    }
    for (const auto& v : t.set) a.set.push_back(v);
    a.verbose_line += t.verbose;
    if (!t.warning.empty() && task == 0) say(t.warning);
    if (!r.request.layout.layout.empty()) {
        if (!t.layout.rank.empty()) {
            if (!t.layout.warning.empty()) say(st.node_name + ": " + t.layout.warning);  // the task of rank 0 only
            return;
        }
        if (task == 0 || strict)
            say(st.node_name + ": " + t.layout.problem +
                (strict ? " (strict: the step fails)" : "; RANK stays SLURM_PROCID"));
        if (strict) fail_task();
        return;
    }
    if (t.slurm_ranks && task == 0)
        say(st.node_name + ": islands: Slurm already places this step's tasks island by island (topology order): "
                           "RANK stays SLURM_PROCID");
}

// Once per node (global task 0 / local task 0): a step without GPUs here, and
// devices named by UUID that the topology does not know.
void say_step_notes(spank_t sp, const StepdState& st, int task) {
    const step::StepInputs& in = st.binding->inputs();
    uint32_t global_task = 1;
    if (spank_get_item(sp, S_TASK_GLOBAL_ID, &global_task) != ESPANK_SUCCESS) global_task = 1;
    if (global_task == 0 && in.gpus.empty() && in.device_ids.empty())
        say(st.node_name + ": the step has no GPUs here: CPUs and memory bound only");
    if (task == 0 && !in.device_problem.empty()) say(st.node_name + ": " + in.device_problem);
}

// Local task 0 of a multi-node step on GPUs of a multi-node NVLink fabric (an
// NVL72 rack: the topology's GPUs carry a fabric cluster UUID): what this task
// can see of NCCL's MNNVL prerequisites, its IMEX channel (GPUTOPO_IMEX_CHANNELS
// names another directory, for tests) and NCCL_CUMEM_ENABLE/NCCL_MNNVL_ENABLE,
// one line per problem (topo/mnnvl.hpp). The fabric's state is gputopo doctor --mnnvl's.
void say_mnnvl_problems(spank_t sp, const StepdState& st, int task) {
    if (task != 0) return;
    uint32_t nodes = 1;
    if (spank_get_item(sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS || nodes < 2) return;
    const Node& node = st.binding->node();
    bool fabric = false;
    for (int g : st.binding->inputs().gpus)
        if (const Gpu* gpu = node.gpu(g); gpu && !gpu->fabric_cluster_uuid.empty()) fabric = true;
    if (!fabric) return;
    MnnvlInputs m;
    m.imex_dir = job_getenv(sp, env::kImexChannelsDirVar).value_or(kImexChannelsDir);
    m.imex = probe_imex_channels(m.imex_dir);
    m.nccl_cumem_enable = job_getenv(sp, env::kNcclCumemEnable);
    m.nccl_mnnvl_enable = job_getenv(sp, env::kNcclMnnvlEnable);
    for (const std::string& p : mnnvl_problems(m)) say(st.node_name + ": multi-node NVLink: " + p);
}

// task_init for a step whose binding could not be made.
void report_problem(const StepdState& st, int task) {
    if (task == 0) {
        std::string where = st.node_name.empty() ? "" : st.node_name + ": ";
        say(where + st.problem + (st.effective.strict ? " (strict: the step fails)" : "; tasks run unbound"));
    }
    if (st.effective.strict) fail_task();
}

// The SLURMD_NODENAME slurmstepd set in this task's environment must name the
// node user_init planned for; else the plan was for another node's topology:
// the reason, and `real` set to the task's node name (the one to speak for).
// Read into the stack: the forked task allocates nothing it need not.
std::string node_name_mismatch(spank_t sp, const StepdState& st, std::string& real) {
    char buf[256];
    const spank_err_t rc = spank_getenv(sp, env::kSlurmdNodename, buf, sizeof buf);
    if (rc != ESPANK_SUCCESS && rc != ESPANK_NOSPACE) return "";
    if (rc == ESPANK_SUCCESS && (!buf[0] || st.node_name == buf)) return "";
    real = rc == ESPANK_SUCCESS ? std::string(buf) : job_getenv(sp, env::kSlurmdNodename).value_or("");
    if (real.empty() || real == st.node_name) return "";
    return "the step's node list names this node '" + st.node_name + "' but slurmstepd says '" + real + "'";
}

// GPUTOPO_DEBUG_TIMING=1 in the job's environment (read into the stack, per task).
bool debug_timing(spank_t sp) {
    char v[4];
    return spank_getenv(sp, env::kDebugTiming, v, sizeof v) == ESPANK_SUCCESS && std::strcmp(v, "1") == 0;
}

// This task's work: made before the fork, else now (the launcher's path too:
// StepBinding::task, step::prepare_apply); islands, which read the task's
// environment, are always added here.
// Whether Slurm gave this task a device cgroup of its own (its SLURMD_TRES_BIND,
// read into the stack): then its work was not made before the fork.
bool own_device_scope(spank_t sp, const StepdState& st) {
    if (!st.binding->devices_constrained()) return false;
    char buf[256];
    if (spank_getenv(sp, env::kSlurmdTresBind, buf, sizeof buf) != ESPANK_SUCCESS) return false;
    return st.binding->task_scope_is_own(std::string(buf));
}

// How many GPU device files this task may open (its devices cgroup is in
// place by task_init): devices= from plugstack.conf, else /dev and /dev/dri.
std::optional<int> openable_gpus(const StepdState& st) {
    try {
        const std::string& dir = shared().config.devices;
        return step::openable_gpu_count(dir.empty() ? dir : step::expand_path(dir, st.node_name, host_name()));
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

const TaskWork& task_work(spank_t sp, const StepdState& st, int task, TaskWork& made) {
    const bool ready =
        task >= 0 && static_cast<size_t>(task) < st.prepared.size() && !own_device_scope(sp, st);
    const bool islands = st.ranks.islands || !st.ranks.problem.empty();
    if (ready && !islands) return st.prepared[static_cast<size_t>(task)];
    if (ready) {
        made = st.prepared[static_cast<size_t>(task)];
    } else {
        const CpuSet affinity = step::current_affinity();  // after task/affinity
        made.action = st.binding->task(task, job_env(sp), &affinity, openable_gpus(st));
        made.apply = step::prepare_apply(made.action);
    }
    add_ranks(sp, st, task, made.action);
    return made;
}

// Where task/affinity bound the task (SLURM_CPU_BIND in its environment), the
// SLURM_CPU_BIND* variables say what gputopo put in its place.
void set_cpu_bind_vars(spank_t sp, const step::TaskAction& a) {
    char buf[8];
    const spank_err_t rc = spank_getenv(sp, env::kSlurmCpuBind, buf, sizeof buf);
    if (rc != ESPANK_SUCCESS && rc != ESPANK_NOSPACE) return;
    for (const auto& v : a.cpu_bind_vars) spank_setenv(sp, v.name.c_str(), v.value.c_str(), 1);
}

// RANK, WORLD_SIZE, MASTER_ADDR, ... (spank/framework_task.hpp) the task has not set.
void set_framework_env(spank_t sp, const StepdState& st, int task, const step::TaskAction& a) {
    if (!st.effective.framework) return;
    const bool users_addr = job_getenv(sp, env::kMasterAddr).has_value();
    FrameworkTask f = framework_for_task(job_env(sp), a.set, st.master_addr, st.ranks.slurm.order.node_rank);
    for (const auto& v : f.set) spank_setenv(sp, v.name.c_str(), v.value.c_str(), 1);
    if (!f.warning.empty()) say(st.node_name + ": " + f.warning);
    if (task == 0 && !users_addr && !st.master_addr_warning.empty()) say(st.node_name + ": " + st.master_addr_warning);
}

// The one local task that says why its binding was not (wholly) applied: the
// first whose prepared work already knows it cannot be (a NUMA node this host
// lacks is found before the fork), else task 0.
int speaking_task(const StepdState& st) {
    for (size_t t = 0; t < st.prepared.size(); ++t)
        if (!st.prepared[t].apply.cpus_error.empty() || !st.prepared[t].apply.mems_error.empty())
            return static_cast<int>(t);
    return 0;
}

void bind_task(spank_t sp, const StepdState& st, int task) {
    TaskWork made;
    const TaskWork& w = task_work(sp, st, task, made);
    const step::TaskAction& a = w.action;
    for (const auto& v : a.set) spank_setenv(sp, v.name.c_str(), v.value.c_str(), 1);
    set_framework_env(sp, st, task, a);
    say_step_notes(sp, st, task);
    say_mnnvl_problems(sp, st, task);
    for (const auto& w2 : a.warnings) say(w2);  // task 0 of the node only carries them
    const step::Applied applied = step::apply_prepared(w.apply);
    // The CPUs applied (even where the memory policy was not): SLURM_CPU_BIND* say so.
    if (applied.cpus && !a.cpu_bind_vars.empty()) set_cpu_bind_vars(sp, a);
    const std::string failure = step::binding_failure(a, applied);
    const std::string why = applied.problem.empty() ? a.skip_reason : failure;
    const bool failed = !failure.empty();
    const bool strict = st.effective.strict;
    if (st.effective.verbose) {
        if (task == 0 && st.ranks.islands) say(st.node_name + ": islands from " + st.ranks.islands_from);
        for (const auto& n : a.notes) say(n);
        std::string line = a.verbose_line;
        if (why != a.skip_reason) line += " (" + why + ")";
        say(line);
    } else if (failed && task == speaking_task(st)) {
        say(st.node_name + ": " + why);
    }
    if (failed && strict) {
        say(st.node_name + " task " + std::to_string(task) + ": " + why + " (strict: the step fails)");
        fail_task();
    }
}

}  // namespace

// Runs as root, before privileges are dropped for user_init: the only place
// the admin-set cache directory can be written.
int remote_init_post_opt(spank_t sp, int, char**) {
    const SharedConfig& sc = shared();
    if (!sc.config_ok || sc.config.cache_dir.empty()) return 0;
    StepdState& st = stepd();
    try {
        if (special_step(sp)) return 0;
        // A step that binds nothing pays for no discovery (with a cache that
        // cannot be written or an NVML that hangs, every step would).
        if (effective_options(sp).mode == Mode::None) return 0;
        if (sc.config.topology.empty()) {
            // slurmd_context.cpp; a node it could not write to the cache is user_init's.
            if (std::optional<Node> node = refresh_stale_cache()) {
                finish_step_node(*node, false, sc.config.nic_policy);  // as step::read_step_node finishes a cache's node
                st.root_read_node = std::move(node);
                st.root_read_for = step_node_name(sp);
            }
            return 0;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const std::string node = trusted_node_name();
        st.root_read_node = read_topology(node);
        st.root_read_for = node;
        st.root_read_us = micros_since(t0);
    } catch (const std::exception&) {
        // user_init reads the topology itself and reports the problem to the user.
        st.root_read_node.reset();
    }
    return 0;
}

int remote_user_init(spank_t sp) {
    auto t0 = std::chrono::steady_clock::now();
    if (!shared().config_ok) return 0;  // logged by slurm_spank_init
    if (special_step(sp)) return 0;
    StepdState& st = stepd();
    try {
        st.effective = effective_options(sp);
    } catch (const std::exception& e) {
        become_unbound(st, e.what());
        return 0;
    }
    if (st.effective.mode == Mode::None) return 0;
    plan_node(sp, st);
    st.plan_us = micros_since(t0);
    return 0;
}

int remote_task_init(spank_t sp) {
    auto t0 = std::chrono::steady_clock::now();
    try {
        StepdState& st = stepd();
        if (st.phase == StepdState::Phase::Inactive) return 0;
        int task = 0;
        if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS) task = 0;
        wrap_task(sp, task, st.node_name);
        if (st.phase == StepdState::Phase::Bound) {
            std::string real;
            std::string wrong = node_name_mismatch(sp, st, real);
            if (!wrong.empty()) {
                st.node_name = real;  // the message speaks for the node the task runs on
                become_unbound(st, std::move(wrong));
            }
        }
        if (st.phase == StepdState::Phase::Unbound) {
            report_problem(st, task);
            set_framework_env(sp, st, task, step::TaskAction{});  // the job still forms its group
            return 0;
        }
        bind_task(sp, st, task);
        if (debug_timing(sp)) {
            double us = micros_since(t0);
            const double per_node = st.root_read_us + st.plan_us;
            std::fprintf(stderr,
                         "gputopo: %s task %d: plugin time %.1f us (task_init %.1f us + (init_post_opt %.1f us + "
                         "user_init %.1f us) / %d tasks)\n",
                         st.node_name.c_str(), task, us + per_node / std::max(1, st.local_tasks), us, st.root_read_us,
                         st.plan_us, st.local_tasks);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gputopo: %s; task runs unbound\n", e.what());
        if (stepd().effective.strict) fail_task();
        return 0;
    } catch (...) {
        return 0;
    }
}

}  // namespace gputopo::spank
