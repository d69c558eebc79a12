#include "launcher/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "launcher/binding.hpp"
#include "launcher/child.hpp"
#include "launcher/classify.hpp"
#include "launcher/error_file.hpp"
#include "launcher/events.hpp"
#include "launcher/framework_env.hpp"
#include "launcher/hooks.hpp"
#include "launcher/island_rank.hpp"
#include "launcher/nccl_env.hpp"
#include "launcher/nccl_topo_file.hpp"
#include "launcher/options.hpp"
#include "launcher/rank_sources.hpp"
#include "launcher/requeue.hpp"
#include "launcher/slurm_ctl.hpp"
#include "launcher/supervisor.hpp"
#include "readers/readers.hpp"
#include "step/apply.hpp"
#include "step/topology_path.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/version.hpp"

namespace gputopo::launch {

namespace {

std::optional<std::string> real_getenv(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
}

// The task's environment as the launcher reads it: the real one with the
// rank source's normalised SLURM_* variables in front (launcher/rank_sources).
Getenv task_getenv = real_getenv;

int env_int(const char* name, int fallback) {
    auto v = task_getenv(name);
    if (!v || v->empty()) return fallback;
    char* end = nullptr;
    long n = std::strtol(v->c_str(), &end, 10);
    return (end && *end == 0) ? static_cast<int>(n) : fallback;
}

std::string env_str(const char* name) { return task_getenv(name).value_or(""); }

void say(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

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

std::string host_name() {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    return host;
}

// Who and where this rank is (Slurm's task variables, read once).
struct RankInfo {
    int rank = 0;
    int local_rank = 0;
    int nodes = 1;
    std::string job_id;
    int restart_count = 0;
    std::string node;    // SLURMD_NODENAME (slurmstepd sets it per task), else the host name
    std::string host;
};

RankInfo rank_info() {
    RankInfo r;
    r.rank = env_int("SLURM_PROCID", 0);
    r.local_rank = env_int("SLURM_LOCALID", 0);
    r.nodes = std::max(1, env_int("SLURM_STEP_NUM_NODES", env_int("SLURM_JOB_NUM_NODES", env_int("SLURM_NNODES", 1))));
    r.job_id = env_str("SLURM_JOB_ID");
    r.restart_count = env_int("SLURM_RESTART_COUNT", 0);
    r.host = host_name();
    r.node = env_str("SLURMD_NODENAME");
    if (r.node.empty()) r.node = r.host;
    return r;
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

bool speaks(const Options& opt, const RankInfo& ri) { return ri.local_rank == 0 || opt.verbose; }

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
void add_framework_env(const Options& opt, const RankInfo& ri, const RankSourceView& rs, std::vector<EnvVar>& wanted) {
    try {
        FrameworkInputs fi;
        fi.master_port_min = opt.master_port_min;
        fi.master_port_max = opt.master_port_max;
        fi.max_restarts = opt.max_restarts;
        fi.error_file = resolve_error_file(opt, ri.job_id, ri.rank, ri.restart_count);
        fi.master_addr = rs.source.master_addr;
        fi.master_port = rs.source.master_port;
        for (auto& v : framework_env(task_getenv, fi)) wanted.push_back(v);
    } catch (const ParseError& e) {
        say("gputopo: " + std::string(e.what()) + "; framework variables not set");
    }
}

// A rank source other than Slurm placed this task (torchrun, Open MPI, a pod):
// the launcher binds it without a Slurm job step.
bool ranked_outside_slurm(const RankSourceView& rs) { return rs.source.name != "slurm" && rs.source.name != "none"; }

// Phase 1: the environment and the binding (nothing applied yet).
Prepared prepare(const Options& opt, const RankInfo& ri, const RankSourceView& rs) {
    Prepared p;
    add_framework_env(opt, ri, rs, p.wanted);
    IslandRankOutcome ir = island_rank(opt, ri.node, ri.local_rank, task_getenv);
    apply_island_rank(p.wanted, ir.rank);
    if (opt.island_procid && opt.rank_order == "island")
        for (auto& v : island_procid_env(ir.rank, env_str("SLURM_PROCID"))) p.wanted.push_back(v);
    if (!ir.note.empty() && speaks(opt, ri) && (ir.rank.empty() || opt.verbose)) say("gputopo: " + ir.note);
    NodeOnce node(opt.topology, ri.node, ri.host);
    p.binding = compute_binding(binding_options(opt), task_getenv, node, ranked_outside_slurm(rs));
    p.binding_mode = opt.gpu_topo.mode;
    for (auto& v : p.binding.action.wanted) p.wanted.push_back(v);
    for (auto& v : ir.env) p.wanted.push_back(v);
    if (!opt.nccl_topo_file.empty()) add_nccl_topo_file(opt, ri, node, p.wanted);
    for (auto& v : nccl_socket_env(list_interfaces())) p.wanted.push_back(v);
    p.wanted.push_back({"GPUTOPO_NO_REQUEUE_EXIT", std::to_string(opt.no_requeue_code), false});
    p.env = keep_user_values(p.wanted, with_nccl_conf(real_getenv, nccl_conf_values(real_getenv, opt.sysroot)));
    const std::string& note = p.binding.note;
    if (!p.binding.bound && note.find("running unbound") != std::string::npos && speaks(opt, ri))
        say("gputopo: warning: " + note);
    if (p.binding.bound && !note.empty() && speaks(opt, ri)) say("gputopo: " + note);
    return p;
}

// Phase 2 (--dry-run): what would be done, on stdout.
int dry_run(const Options& opt, const RankInfo& ri, const RankSourceView& rs, const Prepared& p) {
    std::printf("gputopo-launch dry run: rank %d (local %d) on %s, %d node(s), job %s, restart %d\n", ri.rank,
                ri.local_rank, ri.node.c_str(), ri.nodes, ri.job_id.empty() ? "-" : ri.job_id.c_str(),
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
                    !opt.checkpoint_cmd.empty() && runs_command_hook(opt.checkpoint_ranks, ri.rank, ri.local_rank) ? " (this rank runs it)" : "",
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
bool apply(const Options& opt, const RankInfo& ri, const Prepared& p, EventLog& log) {
    const bool strict = opt.gpu_topo.strict && opt.gpu_topo.mode != Mode::None;
    if (strict && !p.binding.bound && p.binding.note.find("running unbound") != std::string::npos) {
        say("gputopo: " + ri.node + " rank " + std::to_string(ri.rank) + ": " + p.binding.note + " (strict: the task fails)");
        return false;
    }
    for (const auto& v : p.env.set) setenv(v.name.c_str(), v.value.c_str(), 1);
    for (const auto& v : p.env.kept) {
        std::string ours = p.wanted_value(v.name);
        if (speaks(opt, ri) && ours != v.value)
            say("gputopo: kept " + v.name + "=" + v.value + " set by the user (gputopo would set " + ours + ")");
        log.write(Event("env_kept").add("name", v.name).add("value", v.value).add("ours", ours));
    }
    if (p.binding.bound) {
        const step::TaskAction& a = p.binding.action;
        std::string failed = step::apply_task(a);
        if (opt.verbose || opt.gpu_topo.verbose) {
            for (const auto& n : a.notes) say("gputopo: " + n);
            say("gputopo: " + a.verbose_line + (failed.empty() ? "" : " (affinity not applied: " + failed + ")"));
        } else if (!failed.empty() && ri.local_rank == 0) {
            say("gputopo: " + ri.node + ": affinity not applied: " + failed);
        }
        if (std::string why = step::binding_failure(a, failed); strict && !why.empty()) {
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
    sc.local_rank = ri.local_rank;
    sc.nodes = ri.nodes;
    sc.job_id = ri.job_id;
    std::string et = env_str("SLURM_JOB_END_TIME");
    if (!et.empty()) sc.job_end_time = std::atof(et.c_str());
    // Only one rank per node (and the ranks running a command hook) asks
    // slurmctld; KillWait comes from slurm.conf when it is readable.
    const std::string job_id = ri.job_id;
    bool may_query = !job_id.empty() && (ri.local_rank == 0 || (!opt.checkpoint_cmd.empty() &&
                                                                runs_command_hook(opt.checkpoint_ranks, ri.rank, ri.local_rank)));
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

// Phase 6: how the program ended; logs it and says so.
Classification classify_end(const Options& opt, const RankInfo& ri, const SuperviseResult& sr, EventLog& log) {
    ClassifyPolicy pol;
    pol.no_requeue_exit = opt.no_requeue_exit;
    pol.no_requeue_code = opt.no_requeue_code;
    pol.timeout_window_s = 60;
    Classification c = classify(sr.end, pol);
    Event e(c.cls == FailureClass::Success ? "end" : "failure");
    e.add("class", failure_class_name(c.cls)).add("evidence", c.evidence).add("local", c.local)
        .add("exit_status", exit_status_of(sr.end)).add("hooks_run", sr.hooks_run).add("hooks_late", sr.hooks_late);
    log.write(e);
    if (c.cls == FailureClass::Success) return c;
    // A time limit or a cancel ends every rank: one line per node is enough.
    bool ending = c.cls == FailureClass::Timeout || c.cls == FailureClass::Preemption;
    if (!ending || speaks(opt, ri))
        say("gputopo: rank " + std::to_string(ri.rank) + " on " + ri.node + ": " + failure_class_name(c.cls) + ": " +
            c.evidence);
    return c;
}

// Phase 7: requeue a retryable failure, once per failure across ranks.
void requeue_if_due(const Options& opt, const RankInfo& ri, const Classification& c, int status, EventLog& log) {
    const std::string& job_id = ri.job_id;
    // One leader per failure: only it asks slurmctld, decides and speaks
    // (10,000 ranks failing at once must not mean 10,000 RPCs).
    if (!job_id.empty()) {
        std::string cluster = env_str("SLURM_CLUSTER_NAME");
        std::string key = (cluster.empty() ? "" : cluster + ".") + job_id + "." + std::to_string(ri.restart_count);
        std::string local_dir = node_private_dir(opt.node_state_dir, ri.node, env_str("TMPDIR"));
        bool leader = claim_leadership(local_dir, key) && (opt.state_dir.empty() || claim_leadership(opt.state_dir, key));
        if (!leader) {
            log.write(Event("requeue_decision").add("action", "left_to_leader").add("message", "another rank handles this failure"));
            return;
        }
    }
    JobInfo info = job_id.empty() ? JobInfo{} : query_job(job_id);
    RequeueInputs rq;
    rq.in_batch_job = info.known && info.batch;
    rq.requeue_allowed = info.requeue_allowed;
    rq.restart_count = ri.restart_count;
    rq.node = ri.node;
    RequeueDecision d = decide_requeue(c, opt, rq);
    if (d.action != RequeueAction::Requeue) {
        say(d.message);
        log.write(Event("requeue_decision").add("action", requeue_action_name(d.action)).add("message", d.message));
        if (d.action == RequeueAction::BudgetExhausted) log.write(Event("final").add("message", d.message).add("exit_status", status));
        return;
    }
    RequeueResult rr = perform_requeue(job_id, d);
    if (!rr.message.empty()) say(rr.message);
    if (rr.requeued) {
        say(d.message);
        Event e("requeue_decision");
        e.add("action", "requeue").add("message", d.message).add("next_restart", ri.restart_count + 1)
            .add("max_restarts", opt.max_restarts);
        if (d.backoff_s > 0) e.add("backoff_s", d.backoff_s);
        log.write(e);
        if (!d.exclude_node.empty()) log.write(Event("excluded_node").add("excluded", d.exclude_node));
    } else if (rr.lost_race) {
        log.write(Event("requeue_decision").add("action", "left_to_leader").add("message", "the job was already requeued"));
    } else {
        log.write(Event("requeue_decision").add("action", "failed").add("message", rr.message));
    }
}

// Phase 0: the options; returns an exit status when there is nothing to run.
std::optional<int> parse_phase(int argc, char** argv, Options& opt) {
    try {
        opt = parse_options(argc, argv, real_getenv);
    } catch (const ParseError& e) {
        say(std::string("gputopo: ") + e.what());
        say("gputopo: see gputopo-launch --help");
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
        say("gputopo: no program to run (expected: gputopo-launch [OPTIONS] -- PROGRAM [ARGS...])");
        return 2;
    }
    return std::nullopt;
}

}  // namespace

int launcher_main(int argc, char** argv) {
    Options opt;
    if (auto rc = parse_phase(argc, argv, opt)) return *rc;
    // The readers' module the user names (an install outside PREFIX, a
    // container): loaded into the user's own process only.
    if (const char* m = secure_getenv(env::kLaunchTopologyModule); m && *m) readers::set_readers_module(m);
    const RankSourceView rs = rank_source_view(opt, real_getenv);
    task_getenv = rs.getenv;
    const RankInfo ri = rank_info();
    EventLog log;
    EventContext ectx{ri.job_id, env_str("SLURM_STEP_ID"), ri.restart_count, ri.rank, ri.node};
    if (!opt.log_dir.empty()) {
        std::string err;
        if (!log.open(opt.log_dir, ectx, err)) say("gputopo: " + err + "; events are not logged");
    }
    Prepared p = prepare(opt, ri, rs);
    if (opt.framework == "jax") {
        std::string problem = jax_device_problem(ri.local_rank, final_value(p.env, real_getenv, env::kCudaVisibleDevices));
        if (!problem.empty()) {
            say("gputopo: " + problem);
            if (p.binding.exchange) forget_step_gpus(*p.binding.exchange);
            return 2;
        }
    }
    if (opt.dry_run) return dry_run(opt, ri, rs, p);
    if (!apply(opt, ri, p, log)) {
        log.write(Event("end").add("class", "failed").add("evidence", "strict: binding not applied").add("exit_status", 1));
        if (p.binding.exchange) forget_step_gpus(*p.binding.exchange);
        return 1;
    }

    // The error file the program writes to (a TORCHELASTIC_ERROR_FILE the
    // user or torchrun set is read too, and only ours is cleared beforehand:
    // a file from an earlier run is not this run's evidence).
    const std::string error_file = final_value(p.env, real_getenv, env::kTorchelasticErrorFile);
    if (!error_file.empty() && error_file == resolve_error_file(opt, ri.job_id, ri.rank, ri.restart_count))
        unlink(error_file.c_str());

    SuperviseResult sr;
    if (!preflight_failed(opt, ri, sr.end)) {
        sr = supervise_program(opt, ri, log);
        if (!sr.started) {
            say(sr.error);
            log.write(Event("end").add("class", "failed").add("evidence", sr.error).add("exit_status", 127));
            if (p.binding.exchange) forget_step_gpus(*p.binding.exchange);
            return 127;
        }
    }
    if (p.binding.exchange) forget_step_gpus(*p.binding.exchange);
    shield_from_termination();
    read_error_file(error_file, sr, log);
    Classification c = classify_end(opt, ri, sr, log);
    int status = exit_status_of(sr.end);
    if (c.cls == FailureClass::Success || !retryable(c.cls, opt)) return status;
    requeue_if_due(opt, ri, c, status, log);
    return status;
}

}  // namespace gputopo::launch
