#include "launcher/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "launcher/env/binding.hpp"
#include "launcher/child/child.hpp"
#include "launcher/failure/classify.hpp"
#include "launcher/failure/error_file.hpp"
#include "launcher/failure/end_decision.hpp"
#include "launcher/failure/events.hpp"
#include "launcher/env/framework_env.hpp"
#include "launcher/child/hooks.hpp"
#include "launcher/ranks/island_rank.hpp"
#include "launcher/env/nccl_env.hpp"
#include "launcher/env/nccl_topo_file.hpp"
#include "launcher/options/options.hpp"
#include "launcher/ranks/rank_info.hpp"
#include "launcher/ranks/rank_sources.hpp"
#include "launcher/requeue/requeue.hpp"
#include "launcher/requeue/requeue_run.hpp"
#include "launcher/failure/root_cause.hpp"
#include "launcher/requeue/slurm_ctl.hpp"
#include "launcher/child/supervisor.hpp"
#include "readers/readers.hpp"
#include "step/apply.hpp"
#include "step/slurm_rank_order.hpp"
#include "step/task_ranks.hpp"
#include "step/topology_path.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/host.hpp"
#include "topo/core/strings.hpp"
#include "topo/core/version.hpp"
#include "topo/fabric/slurm_islands.hpp"

namespace gputopo::launch {

namespace {

std::optional<std::string> real_getenv(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
}

void say(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

// GPUTOPO_FRAMEWORK_SET: the framework variables the plugin set for this task
// (not the user's). A torchrun worker inherits the list from torchrun's task
// but its RANK, LOCAL_RANK, ... are torchrun's: the list does not apply there.
std::vector<std::string> plugin_framework_names(const Getenv& get) {
    if (get(env::kTorchelasticUseAgentStore)) return {};
    auto v = get(env::kFrameworkSet);
    return v ? split_nonempty(*v, ',') : std::vector<std::string>{};
}

// `get` with `names` unset.
Getenv hiding(const Getenv& get, const std::vector<std::string>& names) {
    if (names.empty()) return get;
    return [get, names](const std::string& n) -> std::optional<std::string> {
        if (std::find(names.begin(), names.end(), n) != names.end()) return std::nullopt;
        return get(n);
    };
}

// --framework=jax: the shared GPU view instead of isolate (JAX narrows each
// process to device SLURM_LOCALID itself).
Options binding_options(const Options& opt) {
    Options o = opt;
    if (o.framework == "jax") o.gpu_topo.isolate = false;
    return o;
}

// The value `name` will have in the program's environment.
std::string final_value(const ResolvedEnv& env, const Getenv& current, const char* name) {
    for (const auto& v : env.set)
        if (v.name == name) return v.value;
    return current(name).value_or("");
}

// What the program will get: the variables, the binding, what was said.
struct Prepared {
    std::vector<EnvVar> wanted;
    ResolvedEnv env;
    LaunchBinding binding;
    std::string wanted_value(const std::string& name) const {
        for (const auto& w : wanted)
            if (w.name == name) return w.value;
        return "";
    }
    std::string binding_text() const {
        return binding.bound ? std::string(mode_name(binding_mode)) + " " + binding.action.verbose_line : binding.note;
    }
    Mode binding_mode = Mode::None;
};

// --nccl-topo-file: this node's NCCL topology, written once per node.
void add_nccl_topo_file(const Options& opt, const RankInfo& ri, NodeOnce& node, std::vector<EnvVar>& wanted) {
    std::string pattern = opt.nccl_topo_file;
    for (size_t at = pattern.find("%j"); at != std::string::npos; at = pattern.find("%j", at + ri.job_id.size()))
        pattern.replace(at, 2, ri.job_id);
    std::string note;
    try {
        const std::string path = step::expand_path(pattern, ri.node, ri.host);
        NcclTopoFileOutcome nt = nccl_topo_file_env(path, node.get(), real_getenv);
        if (nt.var) wanted.push_back(*nt.var);
        note = nt.note;
    } catch (const std::exception& e) {
        note = std::string("warning: cannot read the topology for --nccl-topo-file (") + e.what() +
               "); NCCL_TOPO_FILE not set";
    }
    if (speaks(opt, ri)) say("gputopo: " + note);
}

// The framework variables (torchrun's included), from the rank source.
// `island_ranks`: RANK follows an island or layout order (its rank 0 is on the
// node list's first node), not Slurm's.
void add_framework_env(const Options& opt, const RankInfo& ri, const RankSourceView& rs, bool island_ranks,
                       std::vector<EnvVar>& wanted) {
    try {
        FrameworkInputs fi;
        fi.master_port_min = opt.master_port_min;
        fi.master_port_max = opt.master_port_max;
        fi.max_restarts = opt.max_restarts;
        fi.error_file = resolve_error_file(opt, ri.job_id, ri.rank, ri.restart_count);
        fi.master_addr = rs.source.master_addr;
        fi.master_port = rs.source.master_port;
        const step::SlurmNodeOrder order = island_ranks || rs.source.name != "slurm"
                                               ? step::SlurmNodeOrder{}
                                               : step::slurm_order(ri.getenv, step::node_first_rank(ri.getenv),
                                                                   slurm_config_dir(ri.getenv))
                                                     .order;
        fi.node_rank = order.node_rank;
        if (fi.master_addr.empty() && !real_getenv(env::kMasterAddr)) {
            // The node of rank 0 (island order: the node list's first, which holds island rank 0),
            // its name, else its NodeAddr (one bounded scontrol).
            auto runner = [](const std::vector<std::string>& argv, double timeout_s) {
                CommandResult r = run_command(argv, timeout_s);
                return std::make_pair(r.status, r.output);
            };
            const std::string rank0 = order.rank0_node.empty() ? step::step_first_node(ri.getenv) : order.rank0_node;
            step::MasterAddr m = step::resolve_master_addr(rank0, runner, 5, step::read_local_slurm_conf());
            fi.master_addr = m.addr;
            if (!m.warning.empty() && ri.place.local_id == 0) say("gputopo: warning: " + m.warning);
        }
        for (auto& v : framework_env(ri.getenv, fi)) wanted.push_back(v);
    } catch (const ParseError& e) {
        say("gputopo: " + std::string(e.what()) + "; framework variables not set");
    }
}

// A rank source other than Slurm placed this task (torchrun, Open MPI, a pod):
// the launcher binds it without a Slurm job step.
bool ranked_outside_slurm(const RankSourceView& rs) { return rs.source.name != "slurm" && rs.source.name != "none"; }

// Rank 0 of a Slurm step (not under torchrun, whose agent holds the port):
// is MASTER_PORT free here? One line when it is not.
void check_master_port(const RankInfo& ri, const Prepared& p) {
    if (real_getenv(env::kTorchelasticUseAgentStore)) return;
    if (real_getenv(env::kFrameworkSet)) return;  // the plugin checked it in this task already
    const std::string rank = final_value(p.env, real_getenv, env::kRankVar);
    const std::string port = final_value(p.env, real_getenv, env::kMasterPort);
    if (rank != "0" || port.empty() || port.size() > 5 || ri.job_id.empty()) return;
    std::string clash = port_clash(std::atoi(port.c_str()));
    if (!clash.empty()) say("gputopo: " + clash);
}

// Phase 1: the environment and the binding (nothing applied yet).
Prepared prepare(const Options& opt, const RankInfo& ri, const RankSourceView& rs,
                 const std::vector<std::string>& plugin_names) {
    Prepared p;
    IslandRankOutcome ir = island_rank(opt, ri.node, ri.place.local_id, ri.getenv);
    add_framework_env(opt, ri, rs, !ir.rank.empty() && !ir.slurm_ranks, p.wanted);
    apply_island_rank(p.wanted, ir.rank, ir.node_rank);
    if (opt.island_procid && (opt.rank_order == "island" || !opt.layout.empty()))
        for (auto& v : island_procid_env(ir.rank, ri.procid)) p.wanted.push_back(v);
    if (!ir.note.empty() && speaks(opt, ri) && (ir.rank.empty() || opt.verbose)) say("gputopo: " + ir.note);
    if (!ir.warning.empty()) say("gputopo: " + ir.warning);
    NodeOnce node = launch_node(opt, ri.getenv, ri.node, ri.host);
    p.binding = compute_binding(binding_options(opt), ri.getenv, ri.place, node, ranked_outside_slurm(rs));
    p.binding_mode = opt.gpu_topo.mode;
    if (!node.live_problem().empty() && speaks(opt, ri))
        say("gputopo: warning: " + ri.node + ": " + node.live_problem() + "; the binding uses hwloc's view of this node");
    for (auto& v : p.binding.action.wanted) p.wanted.push_back(v);
    for (auto& v : ir.env) p.wanted.push_back(v);
    if (!opt.nccl_topo_file.empty()) add_nccl_topo_file(opt, ri, node, p.wanted);
    for (auto& v : nccl_socket_env(list_interfaces())) p.wanted.push_back(v);
    p.wanted.push_back({env::kNoRequeueExit, std::to_string(opt.no_requeue_code), false});
    // The plugin's framework variables stay as user values do, but those that
    // --rank-order=island and --layout recompute here are the launcher's.
    std::vector<std::string> ours;
    if ((opt.rank_order == "island" || !opt.layout.empty()) && !ir.rank.empty())
        for (const char* n : {env::kRankVar, env::kRoleRank, env::kGroupRank, env::kNodeRank})
            if (std::find(plugin_names.begin(), plugin_names.end(), n) != plugin_names.end()) ours.push_back(n);
    // A torchrun worker's inherited OMP_* that the plugin set for the whole task (worker_view).
    for (const auto& n : p.binding.replaces) ours.push_back(n);
    p.env = keep_user_values(p.wanted,
                             with_nccl_conf(hiding(real_getenv, ours), nccl_conf_values(real_getenv, opt.sysroot)));
    check_master_port(ri, p);
    const std::string& note = p.binding.note;
    if (p.binding.failed && speaks(opt, ri))
        say("gputopo: warning: " + note);
    if (p.binding.bound && !note.empty() && speaks(opt, ri)) say("gputopo: " + note);
    return p;
}

// Phase 2 (--dry-run): what would be done, on stdout.
int dry_run(const Options& opt, const RankInfo& ri, const RankSourceView& rs, const Prepared& p) {
    std::printf("gputopo-launch dry run: rank %d (local %d) on %s, %d node(s), job %s, restart %d\n", ri.rank,
                ri.place.local_id, ri.node.c_str(), ri.nodes, ri.job_id.empty() ? "-" : ri.job_id.c_str(),
                ri.restart_count);
    std::printf("rank source: %s\n", rs.source.note.c_str());
    if (!rs.gpus_from.empty()) std::printf("node GPUs: from %s\n", rs.gpus_from.c_str());
    if (rs.cpuset) std::printf("cgroup cpuset: %s\n", rs.cpuset->to_list().c_str());
    const LaunchBinding& b = p.binding;
    std::printf("binding: %s\n", b.bound ? p.binding_text().c_str() : (b.note.empty() ? "none" : b.note.c_str()));
    if (b.bound && !b.note.empty()) std::printf("binding note: %s\n", b.note.c_str());
    std::printf("environment:\n");
    for (const auto& v : p.env.set) std::printf("  %s=%s\n", v.name.c_str(), v.value.c_str());
    for (const auto& v : p.env.kept)
        std::printf("  %s=%s (kept: set by the user; gputopo would set %s)\n", v.name.c_str(), v.value.c_str(),
                    p.wanted_value(v.name).c_str());
    std::printf("checkpoint: ");
    if (!hooks_configured(opt)) {
        std::printf("no hooks (signals %s forwarded)\n", "SIGTERM SIGINT SIGUSR1 SIGUSR2 SIGCONT");
    } else {
        int sig = effective_checkpoint_signal(opt);
        std::printf("trigger %s (Slurm --signal=%s@SECS), SIGTERM %s; command %s on ranks %s%s; signal %s to every rank\n",
                    signal_name(opt.trigger_signal).c_str(), signal_name(opt.trigger_signal).substr(3).c_str(),
                    opt.checkpoint_on_term ? "too" : "not",
                    opt.checkpoint_cmd.empty() ? "(none)" : ("'" + opt.checkpoint_cmd + "'").c_str(),
                    hook_ranks_name(opt.checkpoint_ranks),
                    !opt.checkpoint_cmd.empty() && runs_command_hook(opt.checkpoint_ranks, ri.rank, ri.place.local_id) ? " (this rank runs it)" : "",
                    sig ? signal_name(sig).c_str() : "(none)");
        if (opt.checkpoint_auto)
            std::printf("periodic: %s\n", young_daly(opt.checkpoint_cost_s, opt.mtbf_per_node_s, ri.nodes).explain().c_str());
        else if (opt.checkpoint_every_s > 0)
            std::printf("periodic: every %s\n", format_duration(opt.checkpoint_every_s).c_str());
    }
    std::string classes;
    for (const auto& c : opt.requeue_on) classes += (classes.empty() ? "" : ",") + c;
    std::printf("failures: requeue %s for %s, %d of %d restarts used; do-not-requeue exit %d", opt.requeue ? "on" : "off",
                classes.c_str(), ri.restart_count, opt.max_restarts, opt.no_requeue_code);
    for (int c : opt.no_requeue_exit) std::printf(",%d", c);
    std::printf("\ncommand:");
    for (const auto& a : opt.command) std::printf(" %s", a.c_str());
    std::printf("\n");
    return 0;
}

// Phase 3: set the variables in this process and bind it (the program
// inherits both), say what was kept, log the start. False when --gpu-topo's
// `strict` asks to fail because the binding could not be made or applied.
bool apply(const Options& opt, const RankInfo& ri, const Prepared& p, const std::vector<std::string>& plugin_names,
           EventLog& log) {
    const bool strict = opt.gpu_topo.strict && opt.gpu_topo.mode != Mode::None;
    if (strict && p.binding.failed) {
        say("gputopo: " + ri.node + " rank " + std::to_string(ri.rank) + ": " + p.binding.note + " (strict: the task fails)");
        return false;
    }
    for (const auto& v : p.env.set) setenv(v.name.c_str(), v.value.c_str(), 1);
    for (const auto& v : p.env.kept) {
        std::string ours = p.wanted_value(v.name);
        const bool from_plugin = std::find(plugin_names.begin(), plugin_names.end(), v.name) != plugin_names.end();
        if (speaks(opt, ri) && ours != v.value && !from_plugin)
            say("gputopo: kept " + v.name + "=" + v.value + " set by the user (gputopo would set " + ours + ")");
        log.write(Event("env_kept").add("name", v.name).add("value", v.value).add("ours", ours));
    }
    if (p.binding.bound) {
        const step::TaskAction& a = p.binding.action;
        const step::Applied applied = step::apply_task(a);
        // Where task/affinity bound the task, SLURM_CPU_BIND* say what replaced it
        // (the CPUs applied, even where the memory policy was not).
        if (applied.cpus && std::getenv(env::kSlurmCpuBind))
            for (const auto& v : a.cpu_bind_vars) setenv(v.name.c_str(), v.value.c_str(), 1);
        for (const auto& w : a.warnings) say("gputopo: " + w);  // local task 0 only carries them
        if (opt.verbose || opt.gpu_topo.verbose) {
            for (const auto& n : a.notes) say("gputopo: " + n);
            say("gputopo: " + a.verbose_line + (applied.problem.empty() ? "" : " (" + applied.problem + ")"));
        } else if (!applied.problem.empty() && ri.place.local_id == 0) {
            say("gputopo: " + ri.node + ": " + applied.problem);
        }
        if (std::string why = step::binding_failure(a, applied); strict && !why.empty()) {
            say("gputopo: " + ri.node + " rank " + std::to_string(ri.rank) + ": " + why + " (strict: the task fails)");
            return false;
        }
    }
    Event e("start");
    std::string cmd;
    for (const auto& a : opt.command) cmd += (cmd.empty() ? "" : " ") + a;
    e.add("command", cmd).add("binding", p.binding_text()).add("max_restarts", opt.max_restarts)
        .add("pid", static_cast<long long>(getpid()));
    log.write(e);
    return true;
}

// Phase 4: --preflight; true when it failed (then `end` says so).
bool preflight_failed(const Options& opt, const RankInfo& ri, ChildEnd& end) {
    if (opt.preflight.empty()) return false;
    CommandResult pr = run_command({"/bin/sh", "-c", opt.preflight}, 300, Signals::Default);
    if (pr.status == 0) return false;
    std::string out = pr.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    if (out.size() > 400) out = out.substr(out.size() - 400);
    end.preflight_failed = true;
    end.preflight_output = out;
    end.exited = true;
    end.exit_code = 1;
    say("gputopo: preflight '" + opt.preflight + "' failed on " + ri.node + ": " + out);
    return true;
}

// Phase 5: run the program under the supervisor.
SuperviseResult supervise_program(const Options& opt, const RankInfo& ri, EventLog& log) {
    SuperviseContext sc;
    sc.rank = ri.rank;
    sc.local_rank = ri.place.local_id;
    sc.nodes = ri.nodes;
    sc.job_id = ri.job_id;
    if (!ri.job_end_time.empty()) sc.job_end_time = std::atof(ri.job_end_time.c_str());
    // Only one rank per node (and the ranks running a command hook) asks
    // slurmctld; KillWait comes from slurm.conf when it is readable.
    const std::string job_id = ri.job_id;
    bool may_query = !job_id.empty() && (ri.place.local_id == 0 || (!opt.checkpoint_cmd.empty() &&
                                                                runs_command_hook(opt.checkpoint_ranks, ri.rank, ri.place.local_id)));
    if (may_query) sc.end_time_query = [job_id]() { return query_job(job_id).end_time; };
    sc.kill_wait_query = [may_query]() {
        double kw = local_kill_wait();
        return (kw < 0 && may_query) ? query_kill_wait() : kw;
    };
    sc.slurm_signals_all = !job_id.empty() && proctrack_signals_all(local_proctrack_type());
    sc.log = &log;
    return supervise(opt, sc);
}

// The error file the program wrote (torchelastic's record), as evidence for
// the classification of a failed end.
void read_error_file(const std::string& error_file, SuperviseResult& sr, EventLog& log) {
    if (error_file.empty() || exit_status_of(sr.end) == 0) return;
    ErrorRecord er = read_error_record(error_file);
    if (er.found) {
        sr.end.error_record = er.message + "\n" + er.callstack;
        log.write(Event("error_file").add("path", error_file).add("message", er.message)
                      .add("timestamp", er.timestamp).add("error_code", er.error_code));
    } else if (!er.problem.empty()) {
        log.write(Event("error_file").add("path", error_file).add("problem", er.problem));
    }
}

// Phase 0: the options; returns an exit status when there is nothing to run.
std::optional<int> parse_phase(int argc, char** argv, Options& opt) {
    try {
        opt = parse_options(argc, argv, real_getenv);
    } catch (const ParseError& e) {
        say(std::string("gputopo-launch: ") + e.what() + "; see gputopo-launch --help");  // one line
        return 2;
    }
    if (opt.help) {
        std::fputs(usage_text().c_str(), stdout);
        return 0;
    }
    if (opt.version) {
        std::printf("gputopo-launch %s\n", gputopo::kVersion);
        return 0;
    }
    if (opt.gpu_topo.help) {
        std::fputs(step::help_text().c_str(), stdout);
        return 0;
    }
    if (opt.command.empty()) {
        say("gputopo-launch: no program to run (expected: gputopo-launch [OPTIONS] -- PROGRAM [ARGS...])");
        return 2;
    }
    return std::nullopt;
}

// The step-GPU exchange this rank took part in (--gpus-per-task), forgotten
// when the run is done with it: at the program's end, or on any earlier exit.
class StepGpusHeld {
public:
    StepGpusHeld() = default;
    StepGpusHeld(const StepGpusHeld&) = delete;
    StepGpusHeld& operator=(const StepGpusHeld&) = delete;
    ~StepGpusHeld() { forget(); }
    void hold(const std::optional<StepGpusExchange>& x) {
        active_ = x.has_value();
        if (x) held_ = *x;
    }
    void forget() {
        if (active_) forget_step_gpus(held_);
        active_ = false;
    }
    void keep() { active_ = false; }  // left for the other local tasks (--dry-run)

private:
    // Not a std::optional: GCC 16 (Debian testing) warns -Wmaybe-uninitialized
    // on destroying an optional<StepGpusExchange> in this destructor.
    StepGpusExchange held_;
    bool active_ = false;
};

// One run of gputopo-launch: it owns what the phases share (the options, the
// plugin's variable names, the rank, the event log, the prepared environment)
// and what must be undone (the step-GPU exchange), so every exit path cleans up.
class LauncherRun {
public:
    explicit LauncherRun(Options opt) : opt_(std::move(opt)) {}
    int run();

private:
    int run_program();

    Options opt_;
    std::vector<std::string> plugin_names_;  // plugin_framework_names(), read once
    std::optional<RankSourceView> rs_;
    RankInfo ri_;
    EventLog log_;
    Prepared p_;
    StepGpusHeld step_gpus_;
};

int LauncherRun::run() {
    // The readers' module the user names (an install outside PREFIX, a
    // container): loaded into the user's own process only.
    if (const char* m = secure_getenv(env::kLaunchTopologyModule); m && *m) readers::set_readers_module(m);
    plugin_names_ = plugin_framework_names(real_getenv);
    rs_.emplace(rank_source_view(opt_, hiding(real_getenv, plugin_names_)));
    try {
        ri_ = rank_info(rs_->getenv);
    } catch (const ParseError& e) {
        say(std::string("gputopo: ") + e.what());
        return 2;
    }
    EventContext ectx{ri_.job_id, ri_.step_id, ri_.restart_count, ri_.rank, ri_.node};
    if (!opt_.log_dir.empty()) {
        std::string err;
        if (!log_.open(opt_.log_dir, ectx, err)) say("gputopo: " + err + "; events are not logged");
    }
    p_ = prepare(opt_, ri_, *rs_, plugin_names_);
    step_gpus_.hold(p_.binding.exchange);
    if (opt_.framework == "jax") {
        std::string problem = jax_device_problem(ri_.place.local_id, final_value(p_.env, real_getenv, env::kCudaVisibleDevices));
        if (!problem.empty()) {
            say("gputopo: " + problem);
            return 2;
        }
    }
    if (opt_.dry_run) {
        step_gpus_.keep();
        return dry_run(opt_, ri_, *rs_, p_);
    }
    if (!apply(opt_, ri_, p_, plugin_names_, log_)) {
        log_.write(Event("end").add("class", "failed").add("evidence", "strict: binding not applied").add("exit_status", 1));
        return 1;
    }
    return run_program();
}

// The program under the supervisor, then how it ended and what follows.
int LauncherRun::run_program() {
    const Options& opt = opt_;
    const RankInfo& ri = ri_;
    // The error file the program writes to (a TORCHELASTIC_ERROR_FILE the
    // user or torchrun set is read too, and only ours is cleared beforehand:
    // a file from an earlier run is not this run's evidence).
    const std::string error_file = final_value(p_.env, real_getenv, env::kTorchelasticErrorFile);
    const bool ours = !error_file.empty() && error_file == resolve_error_file(opt, ri.job_id, ri.rank, ri.restart_count);
    if (ours) unlink(error_file.c_str());

    SuperviseResult sr;
    if (!preflight_failed(opt, ri, sr.end)) {
        sr = supervise_program(opt, ri, log_);
        if (!sr.started) {
            say(sr.error);
            log_.write(Event("end").add("class", "failed").add("evidence", sr.error).add("exit_status", 127));
            return 127;
        }
    }
    step_gpus_.forget();
    shield_from_termination();
    read_error_file(error_file, sr, log_);
    // Ours is read once, here: it does not outlive the run (a TORCHELASTIC_ERROR_FILE
    // torchrun or the user set is theirs to keep).
    if (ours) unlink(error_file.c_str());
    const int status = exit_status_of(sr.end);
    const std::optional<Classification> c = decide_end(opt, ri, sr, log_);  // launcher/failure/end_decision.hpp
    if (!c || c->cls == FailureClass::Success || !retryable(c->cls, opt)) return status;
    requeue_if_due(opt, ri, *c, status, log_);  // launcher/requeue/requeue_run.hpp
    return status;
}

}  // namespace

int launcher_main(int argc, char** argv) {
    Options opt;
    if (auto rc = parse_phase(argc, argv, opt)) return *rc;
    return LauncherRun(std::move(opt)).run();
}

}  // namespace gputopo::launch
