#include "run/job_run.hpp"

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
#include "run/heartbeat.hpp"
#include "run/node_pool.hpp"
#include "run/rank_output.hpp"
#include "run/replica_peers.hpp"
#include "run/run_files.hpp"
#include "run/slow_nodes.hpp"
#include "run/spare_check.hpp"
#include "run/step_end.hpp"
#include "launcher/requeue/expedite.hpp"
#include "launcher/requeue/requeue.hpp"
#include "launcher/requeue/requeue_asked.hpp"
#include "launcher/requeue/slurm_ctl.hpp"
#include "step/framework_env.hpp"
#include "step/run_bounded.hpp"
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

// The most ranks one step may have: slots x tasks per node beyond it is a typo,
// not a job (and would overflow the per-rank tables).
constexpr long long kMaxRanks = 1 << 24;

// The job's context, read once.
struct JobContext {
    std::string job_id;
    std::vector<std::string> nodes;
    int tasks_per_node = 1;
    int requeues = 0;         // SLURM_RESTART_COUNT
    int restarts_before = 0;  // in-job restarts of this job's earlier runs (the state directory's record)
    std::string state_dir, heartbeat, checkpoint_report;  // absolute
    IslandMap islands;
    std::string island_sources;
    bool requeue_asked = false;
    std::string requeue_sources;  // what was read to decide requeue_asked
};

// A count from the environment: a whole number in [lo, hi], else a usage error naming the variable.
int env_count(const char* name, int fallback, int lo, int hi, const char* option) {
    const std::string v = env(name);
    if (v.empty()) return fallback;
    errno = 0;
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (*end || errno || n < lo || n > hi)
        throw JobUsageError(std::string(name) + " '" + v.substr(0, 40) + "': expected a whole number from " +
                            std::to_string(lo) + " to " + std::to_string(hi) + (option ? std::string(" (or give ") + option + ")" : ""));
    return int(n);
}

JobContext read_context(const JobOptions& o) {
    JobContext c;
    c.job_id = env("SLURM_JOB_ID");
    if (c.job_id.empty()) throw JobUsageError("not inside a Slurm job (SLURM_JOB_ID unset): use it in a batch script");
    const std::string nodelist = env("SLURM_JOB_NODELIST");
    try {
        c.nodes = Hostlist::parse(nodelist).expand();
    } catch (const std::exception& e) {
        throw JobUsageError("SLURM_JOB_NODELIST '" + nodelist.substr(0, 200) + "': " + e.what());
    }
    c.tasks_per_node = o.tasks_per_node > 0 ? o.tasks_per_node : env_count("SLURM_NTASKS_PER_NODE", 1, 1, 4096, "--ntasks-per-node");
    if (static_cast<long long>(c.nodes.size()) * c.tasks_per_node > kMaxRanks)
        throw JobUsageError(std::to_string(c.nodes.size()) + " nodes x " + std::to_string(c.tasks_per_node) +
                            " tasks per node: more than " + std::to_string(kMaxRanks) + " ranks");
    c.requeues = env_count("SLURM_RESTART_COUNT", 0, 0, 1000000, nullptr);
    c.state_dir = absolute_path(o.state_dir.empty() ? "gputopo-run." + c.job_id : o.state_dir);
    if (std::string problem = own_directory(c.state_dir, "--state-dir"); !problem.empty()) throw JobUsageError(problem);
    c.heartbeat = absolute_path(o.heartbeat.empty() ? c.state_dir + "/heartbeat.%a.%r" : o.heartbeat);
    c.checkpoint_report = c.state_dir + "/checkpoint";
    c.restarts_before = recorded_restarts(c.state_dir);
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

// Whether the job asked for a requeue, as gputopo-launch decides it (one rule,
// launcher/requeue/requeue_asked.hpp), with what was read when it did not: bounded.
void read_requeue_asked(JobContext& c) {
    JobInfo info = query_job(c.job_id);
    RequeueAsked a = requeue_asked(c.job_id, info, [](const std::string& n) -> std::optional<std::string> {
        const char* v = std::getenv(n.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    });
    c.requeue_asked = info.known && info.requeue_allowed && a.asked;
    c.requeue_sources = !info.known ? "the job's record could not be read (squeue)"
                        : !info.requeue_allowed ? "the job has Requeue=0"
                                                : a.explain();
}

struct StepRun {
    ChildEnd end;
    int srun_status = 0;
    std::optional<HangVerdict> hang;
    double all_beating_unix = -1;  // first time every rank had reached its first step
    double end_unix = 0;           // when srun was gone
    double hang_unix = -1;         // when the hang was found
    bool killed = false;           // srun was killed after kill_timeout_s
    bool start_stuck = false;      // Slurm had not created the step within --start-timeout
    std::string srun_tail;         // srun's own lines
    std::map<int, std::string> rank_tails;
    std::map<int, std::string> rank_exceptions;
};

// The job's steps Slurm lists ("ID|NAME", all but batch/extern; a step srun still
// waits to create is not listed), bounded; nullopt when squeue failed.
std::optional<std::map<std::string, std::string>> job_steps(const std::string& job_id) {
    CommandResult r = run_command({"squeue", "-h", "-s", "-j", job_id, "-o", "%i|%j"}, 10);
    if (r.status != 0) return std::nullopt;
    std::istringstream in(r.output);
    std::map<std::string, std::string> steps;
    for (std::string line; std::getline(in, line) && steps.size() < 100000;) {
        const size_t bar = line.find('|');
        const std::string id = line.substr(0, bar);
        if (id.empty() || id.find(".batch") != std::string::npos || id.find(".extern") != std::string::npos) continue;
        steps[id] = bar == std::string::npos ? "" : line.substr(bar + 1);
    }
    return steps;
}

// The step this supervisor's srun made, and only it: the job's other steps (a
// monitoring or staging step, a second `gputopo run`, spare checks) are never touched.
class OurStep {
public:
    OurStep(std::string job_id, std::map<std::string, std::string> before)
        : job_id_(std::move(job_id)), before_(std::move(before)) {}

    // Looks for the new step; true once it is known. nullopt: squeue failed.
    std::optional<bool> find() {
        if (!id_.empty()) return true;
        auto steps = job_steps(job_id_);
        if (!steps) return std::nullopt;
        for (const auto& [id, name] : *steps)
            if (!before_.count(id) && name != "gputopo-spare-check") {
                id_ = id;
                break;
            }
        return !id_.empty();
    }
    const std::string& id() const { return id_; }

    // SIGKILL to our step's tasks (a stopped or stuck rank ignores srun's SIGTERM), bounded.
    void cancel() {
        find();
        if (!id_.empty()) run_command({"scancel", "--signal=KILL", id_}, 10);
    }

private:
    std::string job_id_;
    std::map<std::string, std::string> before_;
    std::string id_;
};

class StepWatch {
public:
    StepWatch(const JobOptions& o, const JobContext& c, const NodePool& pool, std::string heartbeat, int ranks,
              bool strip_labels, OurStep& step, EventLog& log)
        : o_(o), c_(c), pool_(pool), heartbeat_(std::move(heartbeat)), ranks_(ranks), out_(ranks, strip_labels),
          beats_(ranks, 0), step_(step), slow_(o.slow, pool.slots, c.tasks_per_node, c.checkpoint_report, log) {}

    // `started_unix`: when srun was started; silence counts from the step's creation.
    StepRun watch(const Child& child, double started_unix) {
        StepRun run;
        launched_unix_ = started_unix;
        beats_.restart_clock(started_unix);
        double end_asked = -1, next_beat_check = 0;
        int status = 0;
        for (bool done = false; !done;) {
            relay(child, 200);
            const double now = mono_now();
            if (::waitpid(child.pid, &status, WNOHANG) == child.pid) done = true;
            if (!done && g_term && !run.end.got_term) {
                run.end.got_term = true;
                ::kill(child.pid, SIGTERM);
                end_asked = now;
            }
            if (!done && end_asked < 0 && !srun_events(out_.srun_tail()).empty()) end_asked = now;  // a rank ended
            if (!done && now >= next_beat_check) {
                next_beat_check = now + 1;
                if (!created_ && end_asked < 0 && check_created(run) == Creation::Waiting) {
                    beats_.restart_clock(unix_now());  // silence counts from the step's creation
                    if (run.start_stuck) {
                        say("Slurm did not create the step within --start-timeout " + std::to_string(int(o_.start_timeout_s)) +
                            " s: ending srun");
                        ::kill(child.pid, SIGKILL);
                        ::waitpid(child.pid, &status, 0);
                        step_.cancel();  // created in the meantime
                        break;
                    }
                }
                check_beats(run, end_asked < 0);
                if (run.hang && end_asked < 0) {
                    run.hang_unix = unix_now();
                    step_.cancel();
                    end_asked = now;
                }
            }
            if (!done && end_asked >= 0 && now - end_asked > o_.kill_timeout_s) {
                say("srun did not end within --kill-timeout " + std::to_string(int(o_.kill_timeout_s)) + " s: killing it");
                ::kill(child.pid, SIGKILL);
                step_.cancel();
                ::waitpid(child.pid, &status, 0);
                run.killed = true;
                done = true;
            }
        }
        drain(child);
        run.end_unix = unix_now();
        run.srun_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        run.srun_tail = out_.srun_tail();
        run.end.stderr_tail = run.srun_tail;
        for (int r : out_.ranks_seen()) {
            run.rank_tails[r] = out_.rank_tail(r);
            if (std::string x = out_.rank_exception(r); !x.empty()) run.rank_exceptions[r] = x;
        }
        return run;
    }

private:
    enum class Creation { Created, Waiting, Unknown };
    // Whether the step exists: a rank has beaten, or Slurm lists our step. Sets
    // run.start_stuck once --start-timeout has passed while Slurm lists none.
    Creation check_created(StepRun& run) {
        for (int r = 0; r < ranks_ && !created_; ++r) created_ = read_beat(heartbeat_path(heartbeat_, r)).mtime >= launched_unix_;
        if (created_) return Creation::Created;
        std::optional<bool> found = step_.find();
        if (!found) return Creation::Unknown;  // squeue failed: no verdict (--hang-timeout still bounds the step)
        created_ = *found;
        if (created_) return Creation::Created;
        if (unix_now() - launched_unix_ > o_.start_timeout_s) run.start_stuck = true;
        return Creation::Waiting;
    }

    void write_all(int fd, const std::string& text) {
        for (size_t off = 0; off < text.size();) {
            ssize_t w = ::write(fd, text.data() + off, text.size() - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return;
            off += size_t(w);
        }
    }

    // One read from each stream that has data (srun's stdout and stderr), relayed without labels.
    void relay(const Child& child, int timeout_ms) {
        pollfd p[2] = {{child.stdout_fd, POLLIN, 0}, {child.stderr_fd, POLLIN, 0}};
        if (child.stdout_fd < 0 && child.stderr_fd < 0) {
            ::usleep(useconds_t(timeout_ms) * 1000);
            return;
        }
        if (::poll(p, 2, timeout_ms) <= 0) return;
        bool any = false;
        for (int i = 0; i < 2; ++i) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP))) continue;
            char buf[65536];
            ssize_t n = ::read(p[i].fd, buf, sizeof buf);
            if (n <= 0) continue;
            any = true;
            write_all(i == 0 ? 1 : 2, out_.feed(buf, size_t(n), i == 1));
        }
        if (!any) ::usleep(useconds_t(timeout_ms) * 1000);  // EOF before srun's exit: do not spin
    }

    void drain(const Child& child) {
        const double until = mono_now() + 2;
        const int fds[2] = {child.stdout_fd, child.stderr_fd};
        for (int i = 0; i < 2; ++i) {
            if (fds[i] < 0) continue;
            ::fcntl(fds[i], F_SETFL, O_NONBLOCK);
            char buf[65536];
            while (mono_now() < until) {
                ssize_t n = ::read(fds[i], buf, sizeof buf);
                if (n <= 0) break;
                write_all(i == 0 ? 1 : 2, out_.feed(buf, size_t(n), i == 1));
            }
            write_all(i == 0 ? 1 : 2, out_.flush(i == 1));
            ::close(fds[i]);
        }
    }

    // `judge`: no rank has ended yet (once one has, the end's root cause decides, not silence).
    void check_beats(StepRun& run, bool judge) {
        const double now = unix_now();
        for (int r = 0; r < ranks_; ++r) beats_.update(r, read_beat(heartbeat_path(heartbeat_, r)), now);
        if (beats_.all_started() && run.all_beating_unix < 0) run.all_beating_unix = now;
        if (judge && o_.hang_timeout_s > 0 && !run.hang && created_) {
            HangPolicy policy;
            policy.hang_timeout_s = o_.hang_timeout_s;
            policy.startup_timeout_s = o_.startup_timeout_s > 0 ? o_.startup_timeout_s : std::max(600.0, o_.hang_timeout_s);
            run.hang = judge_hang(beats_.ranks(), beats_.created(), now, policy, pool_.slots, c_.tasks_per_node);
        }
        if (judge && !run.hang && created_) run.hang = slow_.check(beats_.ranks(), now, pool_.spares.size());
    }

    const JobOptions& o_;
    const JobContext& c_;
    const NodePool& pool_;
    std::string heartbeat_;
    int ranks_;
    RankOutput out_;
    BeatTracker beats_;
    OurStep& step_;
    SlowWatch slow_;
    bool created_ = false;
    double launched_unix_ = 0;
};

struct Verdict {
    Classification cls;
    std::string node;
    int rank = -1;
    int status = 0;
};

// The slot nodes Slurm reports down or not responding (one bounded sinfo).
std::vector<std::string> slurm_lost_nodes(const std::vector<std::string>& nodes) {
    std::vector<std::string> lost;
    if (nodes.empty()) return lost;
    CommandResult r = run_command({"sinfo", "-h", "-N", "-n", join(nodes), "-o", "%N|%T"}, 10);
    if (r.status != 0) return lost;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
        const size_t bar = line.find('|');
        if (bar == std::string::npos) continue;
        const std::string node = line.substr(0, bar), state = line.substr(bar + 1);
        const bool gone = state.find('*') != std::string::npos || state.rfind("down", 0) == 0 || state.rfind("fail", 0) == 0;
        if (gone && std::find(lost.begin(), lost.end(), node) == lost.end()) lost.push_back(node);
    }
    return lost;
}

// The slots none of whose ranks srun reported an end for (srun could not reach them).
std::vector<std::string> unreported_slots(const std::vector<SrunEvent>& events, const NodePool& pool, int tasks_per_node) {
    std::vector<std::string> out;
    for (size_t s = 0; s < pool.slots.size(); ++s) {
        bool reported = false;
        for (const auto& e : events)
            for (const auto& [lo, hi] : e.ranks)
                if (size_t(hi) / size_t(tasks_per_node) >= s && size_t(lo) / size_t(tasks_per_node) <= s) reported = true;
        if (!reported) out.push_back(pool.slots[s]);
    }
    return out;
}

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
        v.node = run.hang->node;
        v.status = 1;
        v.cls.cls = FailureClass::Failed;
        v.cls.local = !v.node.empty();
        v.cls.evidence = run.hang->evidence;
        return v;
    }
    if (run.end.got_term) {
        ChildEnd end = run.end;
        end.exited = true;
        end.exit_code = run.srun_status;
        v.cls = classify(end, ClassifyPolicy{});
        return v;
    }
    StepEndFacts f;
    f.events = srun_events(run.srun_tail);
    f.rank_tails = run.rank_tails;
    f.rank_exceptions = run.rank_exceptions;
    f.slots = pool.slots;
    f.tasks_per_node = tasks_per_node;
    f.srun_status = run.srun_status;
    const bool node_line = std::any_of(f.events.begin(), f.events.end(), [](const SrunEvent& e) { return e.node_lost; });
    if (!node_line && !f.events.empty()) f.slurm_lost = slurm_lost_nodes(unreported_slots(f.events, pool, tasks_per_node));
    StepVerdict sv = root_cause(f, ClassifyPolicy{});
    v.cls = sv.cls;
    v.node = sv.node;
    v.rank = sv.rank;
    v.status = sv.status;
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

// Whether the user's srun arguments label the output themselves (then srun's
// labels are theirs and stay in what is relayed).
bool user_labels(const JobOptions& o) {
    for (const auto& a : o.srun_args)
        if (a == "-l" || a == "--label") return true;
    return false;
}

// `overlap`: the job lost a node. Slurm 22.05 shifts a resized job's per-node GRES
// tables but not its steps' (gres_ctld.c _job_dealloc / _step_dealloc; fixed in
// 23.02.3), so a node after the lost one keeps GPUs counted as held by the dead
// step forever, and a GPU step asking for them is never created ("Requested nodes
// are busy"). --overlap (overlap=force in 22.05) skips the in-use check; the step
// still gets its GPUs. Harmless on later releases: the step is the job's only one.
std::vector<std::string> srun_argv(const JobOptions& o, const NodePool& pool, int tasks_per_node, bool overlap) {
    // No --nodes: Slurm 24.11 refuses it with --distribution=arbitrary (the list names the nodes).
    // --label: each line says which rank wrote it, so the root cause is read per rank
    // (the labels are taken off again before the lines are relayed).
    std::vector<std::string> a = {"srun", "--kill-on-bad-exit=1", "--distribution=arbitrary", "--label",
                                  "--ntasks=" + std::to_string(pool.slots.size() * size_t(tasks_per_node)),
                                  "--nodelist=" + task_nodelist(pool.slots, tasks_per_node)};
    // Its memory likewise (extract_job_resources_node compacts the job's, not the steps'):
    // --mem=0 asks for no amount, so none is checked (the step gets the job's memory).
    auto user_gave = [&](const char* prefix) {
        return std::any_of(o.srun_args.begin(), o.srun_args.end(), [&](const std::string& x) { return x.rfind(prefix, 0) == 0; });
    };
    if (overlap && !user_gave("--overlap")) a.push_back("--overlap");
    if (overlap && !user_gave("--mem")) a.push_back("--mem=0");
    a.insert(a.end(), o.srun_args.begin(), o.srun_args.end());
    a.insert(a.end(), o.command.begin(), o.command.end());
    return a;
}

int requeue_job(const JobContext& c, const RestartDecision& d, int status, EventLog& log) {
    RequeueDecision rq;
    rq.action = RequeueAction::Requeue;
    rq.exclude_node = d.failed_node;
    rq.restart_count = c.requeues;
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

// The address of `node` for the rendezvous, as the plugin resolves the first node
// (its name, else its NodeAddr), once per node.
std::string master_addr_of(const std::string& node) {
    static std::map<std::string, std::string> known;
    auto k = known.find(node);
    if (k != known.end()) return k->second;
    step::MasterAddr m = step::resolve_master_addr(
        node, [](const std::vector<std::string>& argv, double timeout_s) { return step::run_bounded(argv, timeout_s); }, 5,
        step::read_local_slurm_conf());
    if (!m.warning.empty()) say(m.warning);
    return known[node] = m.addr;
}

// srun while it runs: whatever ends the supervisor (an exception included) ends
// the step first, so no rank is ever left running with nothing watching it.
class RunningSrun {
public:
    RunningSrun(Child& child, OurStep& step, double kill_timeout_s) : child_(child), step_(step), kill_timeout_s_(kill_timeout_s) {}
    RunningSrun(const RunningSrun&) = delete;
    RunningSrun& operator=(const RunningSrun&) = delete;
    void ended() { ended_ = true; }
    ~RunningSrun() {
        if (ended_ || child_.pid <= 0) return;
        ::kill(child_.pid, SIGTERM);
        int status = 0;
        for (double t0 = mono_now(); mono_now() - t0 < kill_timeout_s_;) {
            if (::waitpid(child_.pid, &status, WNOHANG) == child_.pid) return;
            ::usleep(100000);
        }
        ::kill(child_.pid, SIGKILL);
        step_.cancel();
        ::waitpid(child_.pid, &status, 0);
    }

private:
    Child& child_;
    OurStep& step_;
    double kill_timeout_s_;
    bool ended_ = false;
};

std::string user_error_message(const Verdict& v) {
    return std::string(failure_class_name(v.cls.cls)) + ": " + v.cls.evidence + "; the job ends with " +
           std::to_string(v.status) + " (no spare used, no requeue)";
}

int supervise(const JobOptions& o, JobContext& c) {
    NodePool pool = split_allocation(c.nodes, o.spares, c.islands);
    EventLog log;
    std::string err;
    if (!log.open(o.log_dir.empty() ? c.state_dir : o.log_dir, EventContext{c.job_id, "job", c.requeues, -1, env("SLURMD_NODENAME")}, err))
        say(err + " (no event log)");
    log.write(step_event("job_start", pool, 0).add("islands", c.island_sources).add("tasks_per_node", c.tasks_per_node)
                  .add("max_restarts", o.max_restarts).add("min_nodes", o.min_nodes).add("hang_timeout_s", o.hang_timeout_s)
                  .add("restarts_before", c.restarts_before + c.requeues));
    say("step on " + join(pool.slots) + (pool.spares.empty() ? "" : "; spares " + join(pool.spares)));
    ReplicaPeerSet replicas(pool, c.islands, c.tasks_per_node);
    RestartPolicy policy{o.max_restarts, o.min_nodes};
    double fault_unix = -1;
    std::vector<std::string> to_record;
    if (!pool.spares.empty())
        for (const auto& n : checked_out(o, c, pool.spares, "start", log)) {
            drop_spare(pool, n);
            to_record.push_back(n);
        }
    std::string fresh;        // the node the last Replace put in
    bool after_node_loss = false;  // the last step ended with a node lost
    bool lost_a_node = false;      // the job lost a node (its steps since run with --overlap)
    for (int restarts = 0;; ++restarts) {
        // The job's restarts so far: this run's, earlier runs' (the state directory) and requeues.
        const int restarts_total = restarts + c.restarts_before + c.requeues;
        const int ranks = int(pool.slots.size()) * c.tasks_per_node;
        const std::string heartbeat = attempt_pattern(c.heartbeat, restarts + c.restarts_before);
        SpawnOptions so;
        so.capture_stdout = true;
        so.extra_env = {{env::kRunRestartCount, std::to_string(restarts_total)},
                        {env::kRunLastCheckpoint, last_checkpoint(c.checkpoint_report)},
                        {env::kRunCheckpointReport, c.checkpoint_report},
                        {env::kRunHeartbeat, heartbeat},
                        {env::kRankOrder, "slurm"}};
        for (auto& v : replicas.launch(pool, c.state_dir, restarts + c.restarts_before, last_checkpoint(c.checkpoint_report), log))
            so.extra_env.push_back(std::move(v));
        if (!python_helper_dir().empty()) so.extra_env.emplace_back("PYTHONPATH", step_pythonpath());
        // Rank 0 runs on slot 0's node, which need not be the first of the step's node list
        // once a spare took a slot: the rendezvous address follows it (an address of the
        // user's own that names no node of the job is kept).
        if (const std::string user = env("MASTER_ADDR");
            user.empty() || std::find(c.nodes.begin(), c.nodes.end(), user) != c.nodes.end())
            so.extra_env.emplace_back("MASTER_ADDR", master_addr_of(pool.slots.front()));
        OurStep step(c.job_id, job_steps(c.job_id).value_or(std::map<std::string, std::string>{}));
        Child child = spawn_child(srun_argv(o, pool, c.tasks_per_node, lost_a_node), so);
        const double launched_unix = unix_now();
        if (child.pid < 0) {
            say("cannot start srun: " + child.error);
            return 127;
        }
        StepRun run;
        {
            RunningSrun running(child, step, o.kill_timeout_s);
            log.write(step_event("step_launch", pool, restarts).add("ranks", ranks));
            // The node the last decision excluded goes into the job's record once the new step runs
            // (two bounded RPCs that must not delay the restart).
            for (const auto& n : to_record) record_excluded(c.job_id, n, log);
            to_record.clear();
            StepWatch watch(o, c, pool, heartbeat, ranks, !user_labels(o), step, log);
            run = watch.watch(child, launched_unix);
            running.ended();
        }
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
        const std::string was_fresh = fresh;
        fresh.clear();
        fault_unix = run.hang_unix > 0 ? run.hang_unix : run.end_unix;
        if (run.start_stuck) log.write(Event("step_start_timeout").add("attempt", restarts).add("node", v.node)
                                           .add("start_timeout_s", o.start_timeout_s));
        if (run.hang && !run.hang->slow) log.write(Event("hang").add("attempt", restarts).add("rank", v.rank).add("node", v.node)
                                    .add("silent_s", run.hang->silent_s).add("startup", run.hang->startup)
                                    .add("detected_unix", run.hang_unix).add("evidence", run.hang->evidence));
        log.write(Event("step_end").add("attempt", restarts).add("class", failure_class_name(v.cls.cls))
                      .add("evidence", v.cls.evidence).add("node", v.node).add("rank", v.rank).add("exit_status", v.status)
                      .add("srun_killed", run.killed));
        if (v.cls.cls == FailureClass::Success) return 0;
        if (run.end.got_term) return v.status ? v.status : 143;
        if (v.cls.cls == FailureClass::UserError) {
            say(user_error_message(v));
            log.write(Event("restart_decision").add("action", "stop").add("reason", user_error_message(v))
                          .add("failed_node", "").add("replacement", "").add("same_island", false).add("restarts", restarts_total));
            settle_final_end(c.job_id, c.requeues, "user_error", log);
            return v.status ? v.status : 1;
        }
        // A step Slurm does not create right after a node loss is the allocation's state
        // (22.05 cannot create a GPU step in a job that lost a node), not the spare's fault:
        // the job is requeued (when it asked) instead of burning the next spares.
        // Slurm keeps the step waiting for resources the job holds (22.05: GPUs still counted as
        // a dead step's after the job lost a node): the same step again with --overlap, once,
        // before a spare is blamed.
        if (run.start_stuck && !lost_a_node && run.srun_tail.find("Requested nodes are busy") != std::string::npos) {
            lost_a_node = true;
            say("Slurm kept the step waiting (\"Requested nodes are busy\"): starting it again with --overlap");
            log.write(Event("restart_decision").add("action", "relaunch").add("reason", "Requested nodes are busy: --overlap")
                          .add("failed_node", "").add("replacement", "").add("same_island", false).add("restarts", restarts_total));
            fresh = was_fresh;
            continue;
        }
        const bool stuck_after_loss = run.start_stuck && after_node_loss && !was_fresh.empty();
        if (stuck_after_loss) {
            v.node.clear();
            v.cls.evidence += " right after a node loss: the allocation cannot start a new step, not " + was_fresh + "'s fault";
        }
        after_node_loss = v.cls.cls == FailureClass::NodeFault;
        lost_a_node = lost_a_node || after_node_loss;
        RestartDecision d = decide_restart(pool, v.cls, v.node, restarts_total, policy, c.islands);
        if (run.start_stuck && v.node.empty() && d.action == RestartAction::Relaunch) {
            d.action = stuck_after_loss ? RestartAction::Requeue : RestartAction::Stop;
            d.reason = v.cls.evidence + (stuck_after_loss ? "" : ", with no new node to blame");
        } else if (v.node.empty() && !run.hang && d.action == RestartAction::Relaunch && v.cls.cls != FailureClass::PeerLost) {
            // No task and no node line: srun itself failed (an option, the resources); the
            // same srun again would fail the same way, restarts spent in a second. Right after
            // a node loss that is the allocation Slurm left (22.05: a resized job's GPUs and
            // memory still counted as the dead step's): a requeue starts afresh.
            d.action = lost_a_node ? RestartAction::Requeue : RestartAction::Stop;
            d.reason = "srun ended with " + std::to_string(v.status) + " before any rank reported: " + last_srun_error(run.srun_tail);
        }
        // The spare the decision names must pass its check, else the next one is tried.
        while (d.action == RestartAction::Replace && !checked_out(o, c, {d.replacement}, "replace", log).empty()) {
            drop_spare(pool, d.replacement);
            to_record.push_back(d.replacement);
            d = decide_restart(pool, v.cls, v.node, restarts_total, policy, c.islands);
        }
        // gputopo-launch's rule: only a job that asked for it is requeued.
        if (d.action == RestartAction::Requeue) {
            read_requeue_asked(c);
            if (!c.requeue_asked) {
                d.action = RestartAction::Stop;
                d.reason += "; but the job did not ask for a requeue (" + c.requeue_sources + "): the job ends";
            }
        }
        say(std::string(restart_action_name(d.action)) + ": " + d.reason);
        Event de("restart_decision");
        de.add("action", restart_action_name(d.action)).add("reason", d.reason).add("failed_node", d.failed_node)
            .add("replacement", d.replacement).add("same_island", d.same_island).add("restarts", restarts_total);
        log.write(de);
        if (d.action == RestartAction::Stop) settle_final_end(c.job_id, c.requeues, "gputopo run's stop", log);
        if (d.action == RestartAction::Stop) return v.status ? v.status : 1;
        if (d.action == RestartAction::Requeue) {
            for (const auto& n : to_record) record_excluded(c.job_id, n, log);  // spares that failed their check
            return requeue_job(c, d, v.status, log);
        }
        if (d.action == RestartAction::Replace || d.action == RestartAction::Shrink) to_record.push_back(d.failed_node);
        if (d.action == RestartAction::Replace) fresh = d.replacement;
        apply_decision(pool, d);
        replicas.applied(d, pool, last_checkpoint(c.checkpoint_report));
        record_restarts(c.state_dir, c.restarts_before + restarts + 1);
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
