#include "launcher/child/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "launcher/child/child.hpp"
#include "topo/core/env_names.hpp"

namespace gputopo::launch {

bool hooks_configured(const Options& o) {
    return !o.checkpoint_cmd.empty() || o.checkpoint_signal_given || o.checkpoint_every_s > 0 || o.checkpoint_auto;
}

int effective_checkpoint_signal(const Options& o) {
    if (o.checkpoint_signal_given) return o.checkpoint_signal;
    if (!o.checkpoint_cmd.empty()) return 0;  // a command hook alone
    return hooks_configured(o) ? SIGUSR2 : 0;
}

namespace {

void say(const std::string& line) {
    std::string l = line + "\n";
    ssize_t w = write(2, l.data(), l.size());
    (void)w;
}

void write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

constexpr int kReapPollMs = 500;

double mono_now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

class Loop {
public:
    Loop(const Options& o, const SuperviseContext& c) : opt_(o), ctx_(c) {}
    SuperviseResult run();

private:
    void log(const Event& e) {
        if (ctx_.log) ctx_.log->write(e);
    }
    void on_signal(int sig, pid_t sender);
    void on_term(bool hooks, bool delivered);
    void drain_signals(int sfd);
    void reap();
    void trigger(Trigger t);
    void on_hook_end(int status);
    void on_timers();
    void relay_stderr(bool drain);
    double end_time();
    double kill_wait();
    double next_timer() const;

    const Options& opt_;
    const SuperviseContext& ctx_;
    SuperviseResult res_;
    pid_t child_ = -1;
    int stderr_fd_ = -1;
    bool child_done_ = false;
    std::string tail_;

    // hooks
    bool run_cmd_ = false;
    int ckpt_sig_ = 0;
    pid_t hook_pid_ = -1;
    Trigger hook_trigger_ = Trigger::Periodic;
    double hook_start_ = 0;            // monotonic
    double hook_deadline_mono_ = -1;   // monotonic, -1 none
    bool hook_late_reported_ = false;
    bool pre_timeout_done_ = false;
    double last_cost_ = -1;
    double periodic_interval_ = 0;
    double next_periodic_ = -1;        // monotonic
    double term_forward_at_ = -1;      // monotonic: forward a held SIGTERM then
    bool term_held_ = false;
    double end_time_ = -2;             // -2 not asked yet
    double kill_wait_ = -2;
    double wall_offset_ = 0;           // unix - monotonic
};

double Loop::end_time() {
    if (ctx_.job_end_time > 0) return ctx_.job_end_time;
    if (end_time_ == -2) end_time_ = ctx_.end_time_query ? ctx_.end_time_query() : -1;
    return end_time_;
}

double Loop::kill_wait() {
    if (opt_.kill_wait_s >= 0) return opt_.kill_wait_s;
    if (kill_wait_ == -2) kill_wait_ = ctx_.kill_wait_query ? ctx_.kill_wait_query() : -1;
    return kill_wait_ >= 0 ? kill_wait_ : 30;
}

double Loop::next_timer() const {
    double t = -1;
    auto consider = [&](double v) {
        if (v >= 0 && (t < 0 || v < t)) t = v;
    };
    if (!child_done_) consider(next_periodic_);
    if (hook_pid_ > 0 && !hook_late_reported_ && hook_deadline_mono_ >= 0) consider(hook_deadline_mono_ - 1.0);
    if (term_held_) consider(term_forward_at_);
    return t;
}

void Loop::trigger(Trigger t) {
    if (hook_pid_ > 0) {
        log(Event("hook_skipped").add("trigger", trigger_name(t)).add("reason", "a hook is already running"));
        return;
    }
    double now_m = mono_now();
    double now_u = now_m + wall_offset_;
    if (t == Trigger::PreTimeout) pre_timeout_done_ = true;
    hook_trigger_ = t;
    hook_start_ = now_m;
    hook_late_reported_ = false;
    ++res_.hooks_run;
    // Start first (latency matters), then work out the deadline.
    std::string what;
    if (ckpt_sig_ > 0 && !child_done_) {
        signal_group(child_, ckpt_sig_);
        what = signal_name(ckpt_sig_);
    }
    if (run_cmd_) {
        SpawnOptions so;
        so.capture_stderr = false;
        so.ignore_term = true;
        so.extra_env = {{env::kCheckpointTrigger, trigger_name(t)}};
        Child h = spawn_child({"/bin/sh", "-c", opt_.checkpoint_cmd}, so);
        if (h.pid > 0) {
            hook_pid_ = h.pid;
            what += std::string(what.empty() ? "" : " + ") + "command";
        } else {
            say(h.error);
        }
    }
    double deadline = hook_deadline(t, now_u, t == Trigger::Term ? -1 : end_time(), kill_wait());
    hook_deadline_mono_ = deadline > 0 ? deadline - wall_offset_ : -1;
    double left = deadline > 0 ? deadline - now_u : -1;
    Event e("hook_start");
    e.add("trigger", trigger_name(t)).add("hook", what.empty() ? "none" : what);
    if (left >= 0) e.add("time_left_s", left);
    if (last_cost_ >= 0) e.add("expected_s", last_cost_);
    log(e);
    if (opt_.verbose)
        say("gputopo: checkpoint hook (" + what + ") started on " + trigger_name(t) +
            (left >= 0 ? ", " + format_duration(left) + " before the kill" : ""));
    double expected = last_cost_;
    if (hook_pid_ > 0 && left >= 0 && expected > left) {
        std::string msg = "gputopo: checkpoint hook may not finish in time: it took " + format_duration(expected) +
                          " last time, " + format_duration(left) + " left before the kill (" + trigger_name(t) + ")";
        say(msg);
        log(Event("hook_at_risk").add("trigger", trigger_name(t)).add("expected_s", expected).add("time_left_s", left));
    }
    if (hook_pid_ <= 0) {
        // A signal hook: delivered, nothing to wait for.
        log(Event("hook_end").add("trigger", trigger_name(t)).add("hook", what.empty() ? "none" : what)
                .add("duration_s", 0.0).add("ok", !what.empty()).add("note", "signal delivered"));
    }
}

void Loop::on_hook_end(int status) {
    double dur = mono_now() - hook_start_;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    std::string how = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                        : "killed by " + signal_name(WTERMSIG(status));
    bool late = hook_deadline_mono_ >= 0 && mono_now() > hook_deadline_mono_;
    log(Event("hook_end").add("trigger", trigger_name(hook_trigger_)).add("duration_s", dur).add("ok", ok)
            .add("status", how).add("late", late));
    if (!ok || opt_.verbose)
        say("gputopo: checkpoint hook (" + std::string(trigger_name(hook_trigger_)) + ") " +
            (ok ? "finished" : "failed (" + how + ")") + " after " + format_duration(dur));
    hook_pid_ = -1;
    last_cost_ = dur;
    if (opt_.checkpoint_auto && dur > 0) {
        YoungDaly y = young_daly(dur, opt_.mtbf_per_node_s, ctx_.nodes);
        periodic_interval_ = y.interval_s;
        if (ctx_.rank == 0) say("gputopo: " + y.explain());
        log(Event("checkpoint_interval").add("interval_s", y.interval_s).add("cost_s", y.cost_s)
                .add("mtbf_job_s", y.mtbf_job_s).add("nodes", y.nodes).add("source", "measured"));
    }
    if (periodic_interval_ > 0 && next_periodic_ >= 0) next_periodic_ = mono_now() + periodic_interval_;
    if (term_held_ && hook_trigger_ == Trigger::Term && ckpt_sig_ == 0) term_forward_at_ = mono_now();
}

void Loop::on_timers() {
    double now = mono_now();
    if (hook_pid_ > 0 && !hook_late_reported_ && hook_deadline_mono_ >= 0 && now >= hook_deadline_mono_ - 1.0) {
        hook_late_reported_ = true;
        ++res_.hooks_late;
        double ran = now - hook_start_;
        std::string msg = "gputopo: checkpoint hook (" + std::string(trigger_name(hook_trigger_)) +
                          ") will not finish in time: still running after " + format_duration(ran) +
                          ", Slurm kills the job in " + format_duration(std::max(0.0, hook_deadline_mono_ - now)) +
                          "; this checkpoint is probably incomplete";
        say(msg);
        log(Event("hook_deadline_missed").add("trigger", trigger_name(hook_trigger_)).add("running_s", ran));
    }
    if (term_held_ && term_forward_at_ >= 0 && now >= term_forward_at_) {
        term_held_ = false;
        if (!child_done_) signal_group(child_, SIGTERM);
        log(Event("signal_forwarded").add("signal", "SIGTERM").add("note", "after the checkpoint hook"));
    }
    if (!child_done_ && next_periodic_ >= 0 && now >= next_periodic_) {
        next_periodic_ = now + periodic_interval_;
        trigger(Trigger::Periodic);
    }
}

void Loop::on_signal(int sig, pid_t sender) {
    if (sig == SIGCHLD) {
        reap();
        return;
    }
    bool hooks = hooks_configured(opt_);
    // Slurm already gave this signal to every process of the step: do not
    // deliver it twice.
    bool delivered = ctx_.slurm_signals_all && opt_.forward_signals == Options::Forward::Auto && sender > 0 &&
                     sender == getppid();
    log(Event("signal").add("signal", signal_name(sig)).add("sender_pid", static_cast<long long>(sender))
            .add("forwarded", !delivered && !(hooks && sig == opt_.trigger_signal)));
    if (sig == SIGTERM) {
        res_.end.got_term = true;
        on_term(hooks, delivered);
        // Only now the lookup that may take seconds (squeue): the hook and
        // the forwarded signal must not wait for it.
        double et = end_time();
        res_.end.term_time_left_s = et > 0 ? et - (mono_now() + wall_offset_) : std::nan("");
        return;
    }
    if (hooks && sig == opt_.trigger_signal) {
        trigger(Trigger::PreTimeout);
        return;
    }
    if (!child_done_ && !delivered) signal_group(child_, sig);
}

void Loop::on_term(bool hooks, bool delivered) {
    if (hooks && opt_.checkpoint_on_term && !pre_timeout_done_ && hook_pid_ <= 0) {
        // With proctrack/linuxproc Slurm signals the program too;
        // one that exits on SIGTERM may be gone before our SIGTERM is read.
        // A hook for a program that has ended saves nothing: say so.
        if (child_done_) {
            log(Event("hook_skipped").add("trigger", "term")
                    .add("reason", "the program had already ended when SIGTERM reached the launcher"));
            return;
        }
        trigger(Trigger::Term);
        // Hold SIGTERM so the program can save: until the command hook
        // ends, or (signal hook) until 2 s before the kill.
        term_held_ = true;
        term_forward_at_ = mono_now() + std::max(0.0, kill_wait() - 2.0);
        if ((ckpt_sig_ > 0 && hook_pid_ <= 0 && ckpt_sig_ == SIGTERM) || delivered) term_held_ = false;
        return;
    }
    if (!child_done_ && !delivered) signal_group(child_, SIGTERM);
}

void Loop::reap() {
    for (;;) {
        int st = 0;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p <= 0) return;
        if (p == child_) {
            child_done_ = true;
            if (hook_pid_ > 0)
                log(Event("program_ended").add("note", "while the checkpoint hook runs; the hook goes on"));
            res_.end.exited = WIFEXITED(st);
            res_.end.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
            res_.end.term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        } else if (p == hook_pid_) {
            on_hook_end(st);
        }
    }
}

void Loop::relay_stderr(bool drain) {
    if (stderr_fd_ < 0) return;
    char buf[16384];
    for (;;) {
        ssize_t n = read(stderr_fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            close(stderr_fd_);
            stderr_fd_ = -1;
            return;
        }
        write_all(2, buf, static_cast<size_t>(n));
        tail_.append(buf, static_cast<size_t>(n));
        if (tail_.size() > 2 * opt_.stderr_tail_bytes) tail_.erase(0, tail_.size() - opt_.stderr_tail_bytes);
        if (!drain) return;
    }
}

// After the program ended: signals still pending count. Slurm signals every
// process of the step (proctrack/linuxproc), so a program that dies of
// SIGTERM at the time limit can be reaped before the launcher's own SIGTERM
// is read; without it the end would be classed as a plain failure. When the
// program died of SIGTERM, wait briefly for ours.
void Loop::drain_signals(int sfd) {
    bool wait_term = !res_.end.got_term && !res_.end.exited && res_.end.term_signal == SIGTERM;
    double until = mono_now() + (wait_term ? 0.5 : 0.0);
    for (;;) {
        signalfd_siginfo si{};
        while (read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
            on_signal(static_cast<int>(si.ssi_signo), static_cast<pid_t>(si.ssi_pid));
        double left = until - mono_now();
        if (res_.end.got_term || left <= 0) return;
        pollfd p{sfd, POLLIN, 0};
        poll(&p, 1, poll_timeout_ms(left));
    }
}

SuperviseResult Loop::run() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    wall_offset_ = (static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9) - mono_now();

    run_cmd_ = !opt_.checkpoint_cmd.empty() && runs_command_hook(opt_.checkpoint_ranks, ctx_.rank, ctx_.local_rank);
    ckpt_sig_ = effective_checkpoint_signal(opt_);

    sigset_t set;
    sigemptyset(&set);
    for (int s : forwarded_signals()) sigaddset(&set, s);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, opt_.trigger_signal);
    sigset_t old;
    sigprocmask(SIG_BLOCK, &set, &old);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);

    SpawnOptions so;
    so.capture_stderr = opt_.capture_stderr;
    if (hooks_configured(opt_) && opt_.trigger_signal != ckpt_sig_ && opt_.trigger_signal != SIGTERM)
        so.ignore.push_back(opt_.trigger_signal);
    Child c = spawn_child(opt_.command, so);
    if (c.pid < 0) {
        res_.error = c.error;
        if (sfd >= 0) close(sfd);
        sigprocmask(SIG_SETMASK, &old, nullptr);
        return res_;
    }
    res_.started = true;
    child_ = c.pid;
    stderr_fd_ = c.stderr_fd;
    if (stderr_fd_ >= 0) fcntl(stderr_fd_, F_SETFL, fcntl(stderr_fd_, F_GETFL) | O_NONBLOCK);

    if (opt_.checkpoint_every_s > 0) periodic_interval_ = opt_.checkpoint_every_s;
    if (opt_.checkpoint_auto) {
        YoungDaly y = young_daly(opt_.checkpoint_cost_s, opt_.mtbf_per_node_s, ctx_.nodes);
        periodic_interval_ = y.interval_s;
        if (ctx_.rank == 0) say("gputopo: " + y.explain() + "; C is re-measured after each hook");
        log(Event("checkpoint_interval").add("interval_s", y.interval_s).add("cost_s", y.cost_s)
                .add("mtbf_job_s", y.mtbf_job_s).add("nodes", y.nodes).add("source", "assumed"));
    }
    if (periodic_interval_ > 0) next_periodic_ = mono_now() + periodic_interval_;

    double child_done_at = -1;
    for (;;) {
        if (child_done_ && child_done_at < 0) child_done_at = mono_now();
        bool stderr_open = stderr_fd_ >= 0;
        // Done: the program ended, its stderr drained (or 200 ms passed, in
        // case a grandchild holds it open), and no hook is running.
        if (child_done_ && hook_pid_ <= 0 && (!stderr_open || mono_now() - child_done_at > 0.2)) break;
        pollfd fds[2];
        int nfds = 0;
        if (sfd >= 0) fds[nfds++] = {sfd, POLLIN, 0};
        if (stderr_open) fds[nfds++] = {stderr_fd_, POLLIN, 0};
        int timeout_ms = -1;
        double t = next_timer();
        if (t >= 0) timeout_ms = poll_timeout_ms(std::max(0.0, t - mono_now()));
        if (child_done_) timeout_ms = timeout_ms < 0 ? 50 : std::min(timeout_ms, 50);
        if (sfd < 0) timeout_ms = timeout_ms < 0 ? 20 : std::min(timeout_ms, 20);
        // SIGCHLD is only a wake-up: the program is reaped at least every
        // kReapPollMs even if the signal went to another thread of this process.
        timeout_ms = timeout_ms < 0 ? kReapPollMs : std::min(timeout_ms, kReapPollMs);
        int n = poll(fds, static_cast<nfds_t>(nfds), timeout_ms);
        if (n < 0 && errno != EINTR) break;
        if (sfd >= 0 && n > 0 && (fds[0].revents & POLLIN)) {
            signalfd_siginfo si{};
            while (read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) on_signal(static_cast<int>(si.ssi_signo), static_cast<pid_t>(si.ssi_pid));
        }
        reap();
        if (stderr_open && n > 0 && (fds[nfds - 1].revents & (POLLIN | POLLHUP | POLLERR))) relay_stderr(false);
        on_timers();
    }
    relay_stderr(true);
    if (stderr_fd_ >= 0) close(stderr_fd_);
    if (sfd >= 0) {
        drain_signals(sfd);
        close(sfd);
    }
    // The program has ended. A SIGTERM from here on (the step ending, a
    // requeue this launcher asks for) stays pending instead of cutting the
    // classification and the requeue short (shield_from_termination()).
    sigset_t term = termination_signals();
    sigset_t keep;
    sigorset(&keep, &old, &term);
    sigprocmask(SIG_SETMASK, &keep, nullptr);
    res_.end.stderr_tail = tail_.size() > opt_.stderr_tail_bytes ? tail_.substr(tail_.size() - opt_.stderr_tail_bytes) : tail_;
    return res_;
}

}  // namespace

int poll_timeout_ms(double wait_s) {
    if (!(wait_s >= 0)) return -1;
    constexpr double kMaxS = 3600;
    return static_cast<int>(std::min(wait_s, kMaxS) * 1000.0) + 1;
}

SuperviseResult supervise(const Options& opt, const SuperviseContext& ctx) {
    Loop loop(opt, ctx);
    return loop.run();
}

}  // namespace gputopo::launch
