#include "launcher/run.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "launcher/binding.hpp"
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
    if (o.framework == "jax")
        for (size_t at; (at = o.gpu_topo.find(",isolate")) != std::string::npos;) o.gpu_topo.erase(at, 8);
    return o;
}

// The value `name` will have in the program's environment.
std::string final_value(const ResolvedEnv& env, const Getenv& current, const char* name) {
    for (const auto& v : env.set)
        if (v.name == name) return v.value;
    return current(name).value_or("");
}

std::string node_name() {
    std::string n = env_str("SLURMD_NODENAME");
    if (!n.empty()) return n;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    return host;
}

}  // namespace

int launcher_main(int argc, char** argv) {
    Options opt;
    try {
        opt = parse_options(argc, argv, real_getenv);
    } catch (const ParseError& e) {
        say(e.what());
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
    if (opt.command.empty()) {
        say("gputopo: no program to run (expected: gputopo-launch [OPTIONS] -- PROGRAM [ARGS...])");
        return 2;
    }

    RankSourceView rs = rank_source_view(opt, real_getenv);
    task_getenv = rs.getenv;
    const int rank = env_int("SLURM_PROCID", 0);
    const int local_rank = env_int("SLURM_LOCALID", 0);
    int nodes = env_int("SLURM_STEP_NUM_NODES", env_int("SLURM_JOB_NUM_NODES", env_int("SLURM_NNODES", 1)));
    if (nodes < 1) nodes = 1;
    const std::string job_id = env_str("SLURM_JOB_ID");
    const int restart_count = env_int("SLURM_RESTART_COUNT", 0);
    const std::string node = node_name();

    EventLog log;
    EventContext ectx{job_id, env_str("SLURM_STEP_ID"), restart_count, rank, node};
    if (!opt.log_dir.empty()) {
        std::string err;
        if (!log.open(opt.log_dir, ectx, err)) say(err + "; events are not logged");
    }

    // The environment.
    std::vector<EnvVar> wanted;
    std::string binding_note, binding_summary;
    std::optional<CpuSet> affinity;
    try {
        FrameworkInputs fi;
        fi.master_port_min = opt.master_port_min;
        fi.master_port_max = opt.master_port_max;
        fi.max_restarts = opt.max_restarts;
        fi.error_file = resolve_error_file(opt, job_id, rank, restart_count);
        fi.master_addr = rs.source.master_addr;
        fi.master_port = rs.source.master_port;
        for (auto& v : framework_env(task_getenv, fi)) wanted.push_back(v);
    } catch (const ParseError& e) {
        say(std::string(e.what()) + "; framework variables not set");
    }
    IslandRankOutcome ir = island_rank(opt, node, local_rank, task_getenv);
    apply_island_rank(wanted, ir.rank);
    if (opt.island_procid && opt.rank_order == "island")
        for (auto& v : island_procid_env(ir.rank, env_str("SLURM_PROCID"))) wanted.push_back(v);
    if (!ir.note.empty() && (local_rank == 0 || opt.verbose) && (ir.rank.empty() || opt.verbose))
        say("gputopo: " + ir.note);
    BindingOutcome b = compute_binding(binding_options(opt), task_getenv);
    binding_note = b.note;
    binding_summary = b.summary;
    affinity = b.cpus;
    for (auto& v : b.env) wanted.push_back(v);
    for (auto& v : ir.env) wanted.push_back(v);
    if (!opt.nccl_topo_file.empty()) {
        char hostname[256] = {0};
        gethostname(hostname, sizeof hostname - 1);
        std::string pattern = opt.nccl_topo_file;
        for (size_t at = pattern.find("%j"); at != std::string::npos; at = pattern.find("%j", at + job_id.size()))
            pattern.replace(at, 2, job_id);
        const std::string path = expand_topology_path(pattern, node, hostname);
        std::string note;
        try {
            Node topo_node = load_node(opt.topology.empty() ? "" : expand_topology_path(opt.topology, node, hostname));
            NcclTopoFileOutcome nt = nccl_topo_file_env(path, topo_node, real_getenv);
            if (nt.var) wanted.push_back(*nt.var);
            note = nt.note;
        } catch (const std::exception& e) {
            std::string what = e.what();
            if (what.rfind("gputopo: ", 0) == 0) what = what.substr(9);
            note = "warning: cannot read the topology for --nccl-topo-file (" + what + "); NCCL_TOPO_FILE not set";
        }
        if (local_rank == 0 || opt.verbose) say("gputopo: " + note);
    }
    for (auto& v : nccl_socket_env(list_interfaces())) wanted.push_back(v);
    wanted.push_back({"GPUTOPO_NO_REQUEUE_EXIT", std::to_string(opt.no_requeue_code), false});
    ResolvedEnv env = keep_user_values(wanted, with_nccl_conf(real_getenv, nccl_conf_values(real_getenv, opt.sysroot)));
    if (opt.framework == "jax") {
        std::string problem = jax_device_problem(local_rank, final_value(env, real_getenv, env::kCudaVisibleDevices));
        if (!problem.empty()) {
            say("gputopo: " + problem);
            return 2;
        }
    }

    if (!b.bound && binding_note.find("running unbound") != std::string::npos && (local_rank == 0 || opt.verbose))
        say("gputopo: warning: " + binding_note);
    if (b.bound && !binding_note.empty() && (local_rank == 0 || opt.verbose)) say("gputopo: " + binding_note);

    auto wanted_value = [&](const std::string& name) {
        for (const auto& w : wanted)
            if (w.name == name) return w.value;
        return std::string();
    };

    if (opt.dry_run) {
        std::printf("gputopo-launch dry run: rank %d (local %d) on %s, %d node(s), job %s, restart %d\n", rank,
                    local_rank, node.c_str(), nodes, job_id.empty() ? "-" : job_id.c_str(), restart_count);
        std::printf("rank source: %s\n", rs.source.note.c_str());
        if (!rs.gpus_from.empty()) std::printf("node GPUs: from %s\n", rs.gpus_from.c_str());
        if (rs.cpuset) std::printf("cgroup cpuset: %s\n", rs.cpuset->to_list().c_str());
        std::printf("binding: %s\n", b.bound ? (b.mode + " " + binding_summary).c_str()
                                               : (binding_note.empty() ? "none" : binding_note.c_str()));
        if (b.bound && !binding_note.empty()) std::printf("binding note: %s\n", binding_note.c_str());
        std::printf("environment:\n");
        for (const auto& v : env.set) std::printf("  %s=%s\n", v.name.c_str(), v.value.c_str());
        for (const auto& v : env.kept)
            std::printf("  %s=%s (kept: set by the user; gputopo would set %s)\n", v.name.c_str(), v.value.c_str(),
                        wanted_value(v.name).c_str());
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
                        !opt.checkpoint_cmd.empty() && runs_command_hook(opt.checkpoint_ranks, rank, local_rank) ? " (this rank runs it)" : "",
                        sig ? signal_name(sig).c_str() : "(none)");
            if (opt.checkpoint_auto)
                std::printf("periodic: %s\n", young_daly(opt.checkpoint_cost_s, opt.mtbf_per_node_s, nodes).explain().c_str());
            else if (opt.checkpoint_every_s > 0)
                std::printf("periodic: every %s\n", format_duration(opt.checkpoint_every_s).c_str());
        }
        std::string classes;
        for (const auto& c : opt.requeue_on) classes += (classes.empty() ? "" : ",") + c;
        std::printf("failures: requeue %s for %s, %d of %d restarts used; do-not-requeue exit %d", opt.requeue ? "on" : "off",
                    classes.c_str(), restart_count, opt.max_restarts, opt.no_requeue_code);
        for (int c : opt.no_requeue_exit) std::printf(",%d", c);
        std::printf("\ncommand:");
        for (const auto& a : opt.command) std::printf(" %s", a.c_str());
        std::printf("\n");
        return 0;
    }

    for (const auto& v : env.set) setenv(v.name.c_str(), v.value.c_str(), 1);
    for (const auto& v : env.kept) {
        if (local_rank == 0 || opt.verbose) {
            std::string ours = wanted_value(v.name);
            if (ours != v.value)
                say("gputopo: kept " + v.name + "=" + v.value + " set by the user (gputopo would set " + ours + ")");
        }
        log.write(Event("env_kept").add("name", v.name).add("value", v.value).add("ours", wanted_value(v.name)));
    }
    if (opt.verbose && b.bound) say("gputopo: " + node + " rank " + std::to_string(rank) + ": " + b.mode + " " + binding_summary);

    {
        Event e("start");
        std::string cmd;
        for (const auto& a : opt.command) cmd += (cmd.empty() ? "" : " ") + a;
        e.add("command", cmd).add("binding", b.bound ? b.mode + " " + binding_summary : binding_note)
            .add("max_restarts", opt.max_restarts).add("pid", static_cast<long long>(getpid()));
        log.write(e);
    }

    // The error file the program writes to (a TORCHELASTIC_ERROR_FILE the
    // user or torchrun set is read too, and only ours is cleared beforehand:
    // a file from an earlier run is not this run's evidence).
    const std::string error_file = final_value(env, real_getenv, env::kTorchelasticErrorFile);
    if (!error_file.empty() && error_file == resolve_error_file(opt, job_id, rank, restart_count))
        unlink(error_file.c_str());

    SuperviseResult sr;
    bool preflight_failed = false;
    std::string preflight_out;
    if (!opt.preflight.empty()) {
        CommandResult pr = run_command({"/bin/sh", "-c", opt.preflight}, 300);
        if (pr.status != 0) {
            preflight_failed = true;
            preflight_out = pr.output;
            while (!preflight_out.empty() && preflight_out.back() == '\n') preflight_out.pop_back();
            if (preflight_out.size() > 400) preflight_out = preflight_out.substr(preflight_out.size() - 400);
        }
    }
    if (preflight_failed) {
        sr.end.preflight_failed = true;
        sr.end.preflight_output = preflight_out;
        sr.end.exited = true;
        sr.end.exit_code = 1;
        say("gputopo: preflight '" + opt.preflight + "' failed on " + node + ": " + preflight_out);
    } else {
        SuperviseContext sc;
        sc.rank = rank;
        sc.local_rank = local_rank;
        sc.nodes = nodes;
        sc.job_id = job_id;
        std::string et = env_str("SLURM_JOB_END_TIME");
        if (!et.empty()) sc.job_end_time = std::atof(et.c_str());
        // Only one rank per node (and the ranks running a command hook) asks
        // slurmctld; KillWait comes from slurm.conf when it is readable.
        bool may_query = !job_id.empty() && (local_rank == 0 || (!opt.checkpoint_cmd.empty() &&
                                                                 runs_command_hook(opt.checkpoint_ranks, rank, local_rank)));
        if (may_query) sc.end_time_query = [job_id]() { return query_job(job_id).end_time; };
        sc.kill_wait_query = [may_query]() {
            double kw = local_kill_wait();
            return (kw < 0 && may_query) ? query_kill_wait() : kw;
        };
        sc.affinity = affinity ? &*affinity : nullptr;
        sc.slurm_signals_all = !job_id.empty() && proctrack_signals_all(local_proctrack_type());
        sc.log = &log;
        sr = supervise(opt, sc);
        if (!sr.started) {
            say(sr.error);
            log.write(Event("end").add("class", "failed").add("evidence", sr.error).add("exit_status", 127));
            return 127;
        }
    }

    if (!error_file.empty() && exit_status_of(sr.end) != 0) {
        ErrorRecord er = read_error_record(error_file);
        if (er.found) {
            sr.end.error_record = er.message + "\n" + er.callstack;
            log.write(Event("error_file").add("path", error_file).add("message", er.message)
                          .add("timestamp", er.timestamp).add("error_code", er.error_code));
        } else if (!er.problem.empty()) {
            log.write(Event("error_file").add("path", error_file).add("problem", er.problem));
        }
    }

    ClassifyPolicy pol;
    pol.no_requeue_exit = opt.no_requeue_exit;
    pol.no_requeue_code = opt.no_requeue_code;
    pol.timeout_window_s = 60;
    Classification c = classify(sr.end, pol);
    int status = exit_status_of(sr.end);
    {
        Event e(c.cls == FailureClass::Success ? "end" : "failure");
        e.add("class", failure_class_name(c.cls)).add("evidence", c.evidence).add("local", c.local)
            .add("exit_status", status).add("hooks_run", sr.hooks_run).add("hooks_late", sr.hooks_late);
        log.write(e);
    }
    if (c.cls == FailureClass::Success) return status;
    // A time limit or a cancel ends every rank: one line per node is enough.
    bool ending = c.cls == FailureClass::Timeout || c.cls == FailureClass::Preemption;
    if (!ending || local_rank == 0 || opt.verbose)
        say("gputopo: rank " + std::to_string(rank) + " on " + node + ": " + failure_class_name(c.cls) + ": " + c.evidence);

    if (!retryable(c.cls, opt)) return status;
    // One leader per failure: only it asks slurmctld, decides and speaks
    // (10,000 ranks failing at once must not mean 10,000 RPCs).
    if (!job_id.empty()) {
        std::string cluster = env_str("SLURM_CLUSTER_NAME");
        std::string key = (cluster.empty() ? "" : cluster + ".") + job_id + "." + std::to_string(restart_count);
        const char* tmp = std::getenv("TMPDIR");
        std::string local_dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (tmp && *tmp ? tmp : "/tmp");
        bool leader = claim_leadership(local_dir, key) && (opt.state_dir.empty() || claim_leadership(opt.state_dir, key));
        if (!leader) {
            log.write(Event("requeue_decision").add("action", "left_to_leader").add("message", "another rank handles this failure"));
            return status;
        }
    }
    JobInfo info = job_id.empty() ? JobInfo{} : query_job(job_id);
    RequeueInputs ri;
    ri.in_batch_job = info.known && info.batch;
    ri.requeue_allowed = info.requeue_allowed;
    ri.restart_count = restart_count;
    ri.node = node;
    RequeueDecision d = decide_requeue(c, opt, ri);
    if (d.action != RequeueAction::Requeue) {
        say(d.message);
        log.write(Event("requeue_decision").add("action", requeue_action_name(d.action)).add("message", d.message));
        if (d.action == RequeueAction::BudgetExhausted) log.write(Event("final").add("message", d.message).add("exit_status", status));
        return status;
    }
    RequeueResult rr = perform_requeue(job_id, d);
    if (!rr.message.empty()) say(rr.message);
    if (rr.requeued) {
        say(d.message);
        Event e("requeue_decision");
        e.add("action", "requeue").add("message", d.message).add("next_restart", restart_count + 1)
            .add("max_restarts", opt.max_restarts);
        if (d.backoff_s > 0) e.add("backoff_s", d.backoff_s);
        log.write(e);
        if (!d.exclude_node.empty()) log.write(Event("excluded_node").add("excluded", d.exclude_node));
    } else if (rr.lost_race) {
        log.write(Event("requeue_decision").add("action", "left_to_leader").add("message", "the job was already requeued"));
    } else {
        log.write(Event("requeue_decision").add("action", "failed").add("message", rr.message));
    }
    return status;
}

}  // namespace gputopo::launch
