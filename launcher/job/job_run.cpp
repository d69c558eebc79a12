#include "launcher/job/job_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "launcher/child/child.hpp"
#include "launcher/failure/classify.hpp"
#include "launcher/failure/events.hpp"
#include "launcher/job/node_pool.hpp"
#include "launcher/job/spare_check.hpp"
#include "launcher/job/step_end.hpp"
#include "launcher/requeue/requeue.hpp"
#include "launcher/requeue/slurm_ctl.hpp"
#include "topo/core/env_names.hpp"
#include "topo/fabric/hostlist.hpp"
#include "topo/fabric/slurm_islands.hpp"

namespace gputopo::launch::job {

namespace {

volatile sig_atomic_t g_term = 0;
void on_term(int) { g_term = 1; }

void say(const std::string& s) { std::fprintf(stderr, "gputopo run: %s\n", s.c_str()); }

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

double mono_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
    return out;
}

// The job's context, read once.
struct JobContext {
    std::string job_id;
    std::vector<std::string> nodes;
    int tasks_per_node = 1;
    int requeues = 0;  // SLURM_RESTART_COUNT
    std::string state_dir, heartbeat, checkpoint_report;
    IslandMap islands;
    std::string island_sources;
};

JobContext read_context(const JobOptions& o) {
    JobContext c;
    c.job_id = env("SLURM_JOB_ID");
    if (c.job_id.empty()) throw JobUsageError("not inside a Slurm job (SLURM_JOB_ID unset): use it in a batch script");
    const std::string nodelist = env("SLURM_JOB_NODELIST");
    try {
        c.nodes = Hostlist::parse(nodelist).expand();
    } catch (const std::exception& e) {
        throw JobUsageError("SLURM_JOB_NODELIST '" + nodelist + "': " + e.what());
    }
    c.tasks_per_node = o.tasks_per_node > 0 ? o.tasks_per_node : std::max(1, std::atoi(env("SLURM_NTASKS_PER_NODE").c_str()));
    c.requeues = std::max(0, std::atoi(env("SLURM_RESTART_COUNT").c_str()));
    c.state_dir = o.state_dir.empty() ? "gputopo-run." + c.job_id : o.state_dir;
    c.heartbeat = o.heartbeat.empty() ? c.state_dir + "/heartbeat.%a.%r" : o.heartbeat;
    c.checkpoint_report = c.state_dir + "/checkpoint";
    try {
        StepIslandMap m = load_step_islands(o.islands, slurm_config_dir([](const std::string& n) -> std::optional<std::string> {
            const char* v = std::getenv(n.c_str());
            return v ? std::optional<std::string>(v) : std::nullopt;
        }));
        c.islands = std::move(m.map);
        c.island_sources = m.sources;
    } catch (const std::exception& e) {
        say(std::string("islands unknown, spares are taken in allocation order: ") + e.what());
        c.island_sources = "none";
    }
    return c;
}

// What the program last wrote to the checkpoint report (first line, at most 4 KiB).
std::string last_checkpoint(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) return "";
    return line.substr(0, 4096);
}

double mtime_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return -1;
    return double(st.st_mtim.tv_sec) + double(st.st_mtim.tv_nsec) * 1e-9;
}

struct StepRun {
    ChildEnd end;
    int srun_status = 0;
    std::optional<StaleRank> hang;
    double all_beating_unix = -1;  // first time every rank had beaten in this step
    double end_unix = 0;           // when srun was gone
    double hang_unix = -1;         // when the hang was found
    bool killed = false;           // srun was killed after kill_timeout_s
    bool start_stuck = false;      // Slurm had not created the step within --start-timeout
};

// The job's steps Slurm lists (all but batch/extern; a step srun still waits
// to create is not listed), bounded; nullopt when squeue failed.
std::optional<std::set<std::string>> job_steps(const std::string& job_id) {
    CommandResult r = run_command({"squeue", "-h", "-s", "-j", job_id, "-o", "%i"}, 10);
    if (r.status != 0) return std::nullopt;
    std::istringstream in(r.output);
    std::set<std::string> steps;
    for (std::string step; in >> step;)
        if (step.find(".batch") == std::string::npos && step.find(".extern") == std::string::npos) steps.insert(step);
    return steps;
}

// Kills what is left of the job's steps (all but batch/extern), bounded.
void cancel_steps(const std::string& job_id) {
    for (const auto& step : job_steps(job_id).value_or(std::set<std::string>{})) run_command({"scancel", "--signal=KILL", step}, 10);
}

class StepWatch {
public:
    // `steps_before`: the job's steps before srun started (the new one is the step not among them).
    StepWatch(const JobOptions& o, const JobContext& c, std::string heartbeat, int ranks, std::set<std::string> steps_before)
        : o_(o), c_(c), heartbeat_(std::move(heartbeat)), ranks_(ranks), beats_(size_t(ranks), -1),
          steps_before_(std::move(steps_before)) {}

    // `started_unix`: when srun was started; a rank's silence counts from then
    // (the loop may start later, after the bounded RPCs that record a node).
    StepRun watch(const Child& child, double started_unix) {
        StepRun run;
        launched_unix_ = started_unix;
        double end_asked = -1, next_beat_check = 0;
        int status = 0;
        for (bool done = false; !done;) {
            relay(child.stderr_fd, 200);
            const double now = mono_now();
            if (::waitpid(child.pid, &status, WNOHANG) == child.pid) done = true;
            if (!done && g_term && !run.end.got_term) {
                run.end.got_term = true;
                ::kill(child.pid, SIGTERM);
                end_asked = now;
            }
            if (!done && end_asked < 0 && !blame_srun_output(tail_).node.empty()) end_asked = now;  // a rank ended
            if (!done && now >= next_beat_check) {
                next_beat_check = now + 1;
                if (!created_ && end_asked < 0 && check_created(started_unix, run) == Creation::Waiting) {
                    started_unix = unix_now();  // silence counts from the step's creation
                    if (run.start_stuck) {
                        say("Slurm did not create the step within --start-timeout " + std::to_string(int(o_.start_timeout_s)) +
                            " s: ending srun");
                        ::kill(child.pid, SIGKILL);
                        ::waitpid(child.pid, &status, 0);
                        cancel_steps(c_.job_id);  // created in the meantime
                        break;
                    }
                }
                check_beats(started_unix, run);
                if (run.hang && end_asked < 0) {
                    // A stopped or stuck rank ignores srun's SIGTERM: SIGKILL the step's tasks at once.
                    run.hang_unix = unix_now();
                    cancel_steps(c_.job_id);
                    end_asked = now;
                }
            }
            if (!done && end_asked >= 0 && now - end_asked > o_.kill_timeout_s) {
                say("srun did not end within --kill-timeout " + std::to_string(int(o_.kill_timeout_s)) + " s: killing it");
                ::kill(child.pid, SIGKILL);
                cancel_steps(c_.job_id);
                ::waitpid(child.pid, &status, 0);
                run.killed = true;
                done = true;
            }
        }
        drain(child.stderr_fd);
        run.end_unix = unix_now();
        run.srun_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        run.end.stderr_tail = tail_;
        return run;
    }

private:
    // Whether the step exists: a rank has beaten, or Slurm lists a step that
    // was not there before srun. Sets run.start_stuck once --start-timeout has
    // passed while Slurm still lists no new step.
    enum class Creation { Created, Waiting, Unknown };
    Creation check_created(double started_unix, StepRun& run) {
        for (int r = 0; r < ranks_ && !created_; ++r) created_ = mtime_of(heartbeat_path(heartbeat_, r)) >= started_unix;
        if (created_) return Creation::Created;
        auto steps = job_steps(c_.job_id);
        if (!steps) return Creation::Unknown;  // squeue failed: no verdict (--hang-timeout still bounds the step)
        for (const auto& s : *steps) created_ = created_ || !steps_before_.count(s);
        if (created_) return Creation::Created;
        if (unix_now() - launched_unix_ > o_.start_timeout_s) run.start_stuck = true;
        return Creation::Waiting;
    }

    void relay(int fd, int timeout_ms) {
        if (fd < 0) {
            ::usleep(useconds_t(timeout_ms) * 1000);
            return;
        }
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return;
        char buf[65536];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) {
            ::usleep(useconds_t(timeout_ms) * 1000);  // EOF before srun's exit: do not spin
            return;
        }
        ssize_t w = ::write(2, buf, size_t(n));
        (void)w;
        tail_.append(buf, size_t(n));
        if (tail_.size() > kTail) tail_.erase(0, tail_.size() - kTail);
    }

    void drain(int fd) {
        if (fd < 0) return;
        const double until = mono_now() + 2;
        ::fcntl(fd, F_SETFL, O_NONBLOCK);
        char buf[65536];
        while (mono_now() < until) {
            ssize_t n = ::read(fd, buf, sizeof buf);
            if (n <= 0) break;
            ssize_t w = ::write(2, buf, size_t(n));
            (void)w;
            tail_.append(buf, size_t(n));
        }
        if (tail_.size() > kTail) tail_.erase(0, tail_.size() - kTail);
        ::close(fd);
    }

    void check_beats(double started_unix, StepRun& run) {
        bool all = true;
        for (int r = 0; r < ranks_; ++r) {
            beats_[size_t(r)] = mtime_of(heartbeat_path(heartbeat_, r));
            all = all && beats_[size_t(r)] >= started_unix;
        }
        if (all && run.all_beating_unix < 0) run.all_beating_unix = unix_now();
        if (o_.hang_timeout_s > 0 && !run.hang) run.hang = stalest_rank(beats_, started_unix, unix_now(), o_.hang_timeout_s);
    }

    static constexpr size_t kTail = 64 * 1024;
    const JobOptions& o_;
    const JobContext& c_;
    std::string heartbeat_;
    int ranks_;
    std::vector<double> beats_;
    std::set<std::string> steps_before_;
    bool created_ = false;
    double launched_unix_ = 0;
    std::string tail_;
};

struct Verdict {
    Classification cls;
    std::string node;
    int rank = -1;
    int status = 0;
};

// `fresh`: the node this step got in place of a failed one ("" none), blamed
// when Slurm did not create the step in time (the others ran the last step).
Verdict judge(const StepRun& run, const NodePool& pool, int tasks_per_node, const std::string& fresh, double start_timeout_s) {
    Verdict v;
    v.status = run.srun_status;
    if (run.start_stuck) {
        v.node = fresh;
        v.status = 1;
        v.cls.cls = FailureClass::Failed;
        v.cls.local = true;
        v.cls.evidence = "Slurm did not create the step within --start-timeout " + std::to_string(int(start_timeout_s)) +
                         " s" + (fresh.empty() ? "" : " (" + fresh + " new in it)");
        return v;
    }
    if (run.hang) {
        v.rank = run.hang->rank;
        size_t slot = size_t(v.rank / tasks_per_node);
        v.node = slot < pool.slots.size() ? pool.slots[slot] : "";
        v.cls.cls = FailureClass::Failed;
        v.cls.local = true;
        v.cls.evidence = "hang: no heartbeat from rank " + std::to_string(v.rank) + " on " + v.node + " for " +
                         std::to_string(int(run.hang->silent_s)) + " s";
        return v;
    }
    ChildEnd end = run.end;
    SrunBlame b = blame_srun_output(end.stderr_tail);
    v.node = b.node;
    v.rank = b.rank;
    if (b.rank >= 0) {
        end.exited = b.exited;
        end.exit_code = b.exit_code;
        end.term_signal = b.term_signal;
        v.status = b.exited ? b.exit_code : 128 + b.term_signal;
    } else {
        end.exited = true;
        end.exit_code = run.srun_status;
    }
    ClassifyPolicy pol;
    v.cls = classify(end, pol);
    if (b.node_lost && v.cls.cls != FailureClass::Timeout && v.cls.cls != FailureClass::Preemption) {
        v.cls.cls = FailureClass::NodeFault;
        v.cls.evidence = b.line;
        if (v.status == 0) v.status = 1;
    }
    if (v.cls.evidence.empty() && !b.line.empty()) v.cls.evidence = b.line;
    return v;
}

// srun's last "srun: error:" line, for a step that failed before any rank ran.
std::string last_srun_error(const std::string& tail) {
    size_t p = tail.rfind("srun: error:");
    if (p == std::string::npos) return "(no srun error line)";
    return tail.substr(p, std::min(tail.find('\n', p), p + 300) - p);
}

void record_excluded(const std::string& job_id, const std::string& node, EventLog& log) {
    if (node.empty()) return;
    JobInfo info = query_job(job_id);
    if (!info.known) return;
    std::string comment = merge_exclusion_record(info.comment, node, 0);
    CommandResult u = run_command({"scontrol", "update", "JobId=" + job_id, "Comment=" + comment}, 15);
    log.write(Event("excluded_node").add("excluded", node).add("recorded", u.status == 0));
}

std::vector<std::string> srun_argv(const JobOptions& o, const NodePool& pool, int tasks_per_node) {
    // No --nodes: Slurm 24.11 refuses it with --distribution=arbitrary (the list names the nodes).
    std::vector<std::string> a = {"srun", "--kill-on-bad-exit=1", "--distribution=arbitrary",
                                  "--ntasks=" + std::to_string(pool.slots.size() * size_t(tasks_per_node)),
                                  "--nodelist=" + task_nodelist(pool.slots, tasks_per_node)};
    a.insert(a.end(), o.srun_args.begin(), o.srun_args.end());
    a.insert(a.end(), o.command.begin(), o.command.end());
    return a;
}

int requeue_job(const JobContext& c, const RestartDecision& d, int status, EventLog& log) {
    RequeueDecision rq;
    rq.action = RequeueAction::Requeue;
    rq.exclude_node = d.failed_node;
    rq.message = "gputopo run: " + d.reason;
    RequeueResult r = perform_requeue(c.job_id, rq);
    say(r.requeued ? "requeued without " + d.failed_node : "requeue failed: " + r.message);
    log.write(Event("requeue").add("requeued", r.requeued).add("excluded", d.failed_node).add("message", r.message)
                  .add("next_restart", c.requeues + 1));
    return status == 0 ? 1 : status;
}

// The directory of the installed Python helper (gputopo_run.py), beside this
// program's bin/: PREFIX/share/gputopo/python; "" when it is not there.
std::string python_helper_dir() {
    static const std::string found = [] {
        char exe[4096];
        ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) return std::string();
        std::string path(exe, size_t(n));
        std::string dir = path.substr(0, path.rfind('/')) + "/../share/gputopo/python";
        struct stat st {};
        return ::stat((dir + "/gputopo_run.py").c_str(), &st) == 0 ? dir : std::string();
    }();
    return found;
}

// PYTHONPATH for the step: the user's, then the helper's directory (a copy of
// the user's own comes first).
std::string step_pythonpath() {
    const std::string user = env("PYTHONPATH");
    return user.empty() ? python_helper_dir() : user + ":" + python_helper_dir();
}

// Checks `nodes` (spares), logs each verdict; returns the nodes that failed.
std::vector<std::string> checked_out(const JobOptions& o, const JobContext& c, const std::vector<std::string>& nodes,
                                     const char* stage, EventLog& log) {
    std::vector<std::string> bad;
    for (const auto& v : check_spares(nodes, o.spare_check, o.spare_check_timeout_s, c.job_id)) {
        log.write(Event("spare_check").add("stage", stage).add("node", v.node).add("ok", v.ok).add("reason", v.reason)
                      .add("seconds", v.seconds).add("command", o.spare_check));
        if (v.ok) continue;
        say("spare " + v.node + " excluded: " + v.reason);
        bad.push_back(v.node);
    }
    return bad;
}

// A spare that failed its check leaves the pool for the rest of the job.
void drop_spare(NodePool& pool, const std::string& node) {
    pool.spares.erase(std::remove(pool.spares.begin(), pool.spares.end(), node), pool.spares.end());
    if (std::find(pool.excluded.begin(), pool.excluded.end(), node) == pool.excluded.end()) pool.excluded.push_back(node);
}

Event step_event(const char* name, const NodePool& pool, int attempt) {
    Event e(name);
    e.add("attempt", attempt).add("slots", join(pool.slots)).add("spares", join(pool.spares)).add("excluded", join(pool.excluded));
    return e;
}

int supervise(const JobOptions& o, JobContext& c) {
    NodePool pool = split_allocation(c.nodes, o.spares, c.islands);
    ::mkdir(c.state_dir.c_str(), 0755);
    EventLog log;
    std::string err;
    if (!log.open(o.log_dir.empty() ? c.state_dir : o.log_dir, EventContext{c.job_id, "job", c.requeues, -1, env("SLURMD_NODENAME")}, err))
        say(err + " (no event log)");
    log.write(step_event("job_start", pool, 0).add("islands", c.island_sources).add("tasks_per_node", c.tasks_per_node)
                  .add("max_restarts", o.max_restarts).add("min_nodes", o.min_nodes).add("hang_timeout_s", o.hang_timeout_s));
    say("step on " + join(pool.slots) + (pool.spares.empty() ? "" : "; spares " + join(pool.spares)));
    RestartPolicy policy{o.max_restarts, o.min_nodes};
    double fault_unix = -1;
    std::vector<std::string> to_record;
    if (!pool.spares.empty())
        for (const auto& n : checked_out(o, c, pool.spares, "start", log)) {
            drop_spare(pool, n);
            to_record.push_back(n);
        }
    std::string fresh;  // the node the last Replace put in
    for (int restarts = 0;; ++restarts) {
        const int ranks = int(pool.slots.size()) * c.tasks_per_node;
        const std::string heartbeat = attempt_pattern(c.heartbeat, restarts);
        SpawnOptions so;
        so.extra_env = {{env::kRunRestartCount, std::to_string(restarts + c.requeues)},
                        {env::kRunLastCheckpoint, last_checkpoint(c.checkpoint_report)},
                        {env::kRunCheckpointReport, c.checkpoint_report},
                        {env::kRunHeartbeat, heartbeat}};
        if (!python_helper_dir().empty()) so.extra_env.emplace_back("PYTHONPATH", step_pythonpath());
        std::set<std::string> steps_before = job_steps(c.job_id).value_or(std::set<std::string>{});
        Child child = spawn_child(srun_argv(o, pool, c.tasks_per_node), so);
        const double launched_unix = unix_now();
        if (child.pid < 0) {
            say("cannot start srun: " + child.error);
            return 127;
        }
        log.write(step_event("step_launch", pool, restarts).add("ranks", ranks));
        // The node the last decision excluded goes into the job's record once the new step runs
        // (two bounded RPCs that must not delay the restart).
        for (const auto& n : to_record) record_excluded(c.job_id, n, log);
        to_record.clear();
        StepWatch watch(o, c, heartbeat, ranks, std::move(steps_before));
        StepRun run = watch.watch(child, launched_unix);
        if (fault_unix > 0 && run.all_beating_unix > 0) {
            double restart_s = run.all_beating_unix - fault_unix;
            RestartWaste w = daly_with_restart(o.checkpoint_cost_s, o.mtbf_per_node_s / double(c.nodes.size()), restart_s,
                                               o.checkpoint_persist_s);
            log.write(Event("restart_time").add("attempt", restarts).add("restart_s", restart_s)
                          .add("checkpoint_interval_s", w.interval_s).add("waste", w.waste));
            say("restart took " + std::to_string(restart_s) + " s (fault seen -> every rank beating); Daly interval " +
                std::to_string(int(w.interval_s)) + " s");
        }
        Verdict v = judge(run, pool, c.tasks_per_node, fresh, o.start_timeout_s);
        fresh.clear();
        fault_unix = run.hang_unix > 0 ? run.hang_unix : run.end_unix;
        if (run.start_stuck) log.write(Event("step_start_timeout").add("attempt", restarts).add("node", v.node)
                                           .add("start_timeout_s", o.start_timeout_s));
        if (run.hang) log.write(Event("hang").add("attempt", restarts).add("rank", v.rank).add("node", v.node)
                                    .add("silent_s", run.hang->silent_s).add("detected_unix", run.hang_unix));
        log.write(Event("step_end").add("attempt", restarts).add("class", failure_class_name(v.cls.cls))
                      .add("evidence", v.cls.evidence).add("node", v.node).add("rank", v.rank).add("exit_status", v.status)
                      .add("srun_killed", run.killed));
        if (v.cls.cls == FailureClass::Success) return 0;
        if (run.end.got_term) return v.status ? v.status : 143;
        RestartDecision d = decide_restart(pool, v.cls, v.node, restarts, policy, c.islands);
        if (run.start_stuck && v.node.empty() && d.action == RestartAction::Relaunch) {
            d.action = RestartAction::Stop;
            d.reason = v.cls.evidence + ", with no new node to blame";
        } else if (v.node.empty() && !run.hang && d.action == RestartAction::Relaunch) {
            // No task and no node line: srun itself failed (an option, the resources); the
            // same srun again would fail the same way, restarts spent in a second.
            d.action = RestartAction::Stop;
            d.reason = "srun ended with " + std::to_string(v.status) + " before any rank reported: " + last_srun_error(run.end.stderr_tail);
        }
        // The spare the decision names must pass its check, else the next one is tried.
        while (d.action == RestartAction::Replace && !checked_out(o, c, {d.replacement}, "replace", log).empty()) {
            drop_spare(pool, d.replacement);
            to_record.push_back(d.replacement);
            d = decide_restart(pool, v.cls, v.node, restarts, policy, c.islands);
        }
        say(std::string(restart_action_name(d.action)) + ": " + d.reason);
        Event de("restart_decision");
        de.add("action", restart_action_name(d.action)).add("reason", d.reason).add("failed_node", d.failed_node)
            .add("replacement", d.replacement).add("same_island", d.same_island).add("restarts", restarts);
        log.write(de);
        if (d.action == RestartAction::Stop) return v.status ? v.status : 1;
        if (d.action == RestartAction::Requeue) {
            for (const auto& n : to_record) record_excluded(c.job_id, n, log);  // spares that failed their check
            return requeue_job(c, d, v.status, log);
        }
        if (d.action == RestartAction::Replace || d.action == RestartAction::Shrink) to_record.push_back(d.failed_node);
        if (d.action == RestartAction::Replace) fresh = d.replacement;
        apply_decision(pool, d);
    }
}

}  // namespace

int run_job(const JobOptions& o) {
    try {
        struct sigaction sa {};
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &sa, nullptr);
        JobContext c = read_context(o);
        return supervise(o, c);
    } catch (const std::exception& e) {
        say(e.what());
        return 2;
    }
}

}  // namespace gputopo::launch::job
