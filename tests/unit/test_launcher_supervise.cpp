// The supervisor with real processes: signals, hooks, deadlines, exit status.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "launcher/child/child.hpp"
#include "launcher/child/supervisor.hpp"

using namespace gputopo::launch;

namespace {

// Sends signals to this test process later, from forked helpers. The test
// signals stay blocked while it lives (supervise() restores that mask when it
// returns), and at the end it waits for its helpers and takes any signal that
// came after supervise() returned: a late SIGUSR1 must not kill the whole
// unit-test binary and lose every other case's result.
class Signals {
public:
    Signals() {
        sigemptyset(&set_);
        for (int s : {SIGUSR1, SIGUSR2, SIGTERM}) sigaddset(&set_, s);
        sigprocmask(SIG_BLOCK, &set_, &old_);
    }
    ~Signals() {
        for (pid_t p : senders_) waitpid(p, nullptr, 0);
        timespec zero{0, 0};
        while (sigtimedwait(&set_, nullptr, &zero) > 0) {
        }
        sigprocmask(SIG_SETMASK, &old_, nullptr);
    }
    Signals(const Signals&) = delete;
    Signals& operator=(const Signals&) = delete;
    void send_later(int sig, double delay_s) {
        pid_t me = getpid();
        pid_t p = fork();
        if (p == 0) {
            usleep(static_cast<useconds_t>(delay_s * 1e6));
            kill(me, sig);
            _exit(0);
        }
        if (p > 0) senders_.push_back(p);
    }

private:
    sigset_t set_{};
    sigset_t old_{};
    std::vector<pid_t> senders_;
};

std::string tmp_path(const std::string& name) {
    return "/tmp/gputopo-launch-test-" + std::to_string(getpid()) + "-" + name;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Options base(std::vector<std::string> cmd) {
    Options o;
    o.command = std::move(cmd);
    o.kill_wait_s = 30;
    return o;
}

}  // namespace

TEST_CASE("supervise: exit code, 128+signal, stderr tail", "[launcher]") {
    Options o = base({"/bin/sh", "-c", "echo 'NVRM: Xid (PCI:0000:3b:00): 79' >&2; exit 3"});
    SuperviseResult r = supervise(o, SuperviseContext{});
    REQUIRE(r.started);
    CHECK(r.end.exited);
    CHECK(r.end.exit_code == 3);
    CHECK(r.end.stderr_tail.find("Xid (PCI:0000:3b:00): 79") != std::string::npos);
    Options k = base({"/bin/sh", "-c", "kill -SEGV $$"});
    SuperviseResult rk = supervise(k, SuperviseContext{});
    CHECK_FALSE(rk.end.exited);
    CHECK(rk.end.term_signal == SIGSEGV);
    CHECK(exit_status_of(rk.end) == 128 + SIGSEGV);
    Options missing = base({"/nonexistent/program"});
    SuperviseResult rm = supervise(missing, SuperviseContext{});
    CHECK(rm.end.exit_code == 127);
    CHECK(rm.end.stderr_tail.find("gputopo: cannot run '/nonexistent/program'") != std::string::npos);
}

TEST_CASE("supervise: SIGTERM and SIGUSR1 reach the program and its children", "[launcher]") {
    Signals sig;
    std::string f = tmp_path("sig");
    std::remove(f.c_str());
    // The program and a grandchild both record what they receive.
    std::string script =
        "trap 'echo child-USR1 >> " + f + "' USR1; trap 'echo child-TERM >> " + f + "; wait; exit 7' TERM; "
        "sh -c \"trap '' USR1; trap 'echo grandchild-TERM >> " + f + "; exit 0' TERM; while :; do sleep 0.05; done\" & "
        "while :; do sleep 0.05; done";
    Options o = base({"/bin/bash", "-c", script});
    sig.send_later(SIGUSR1, 0.4);
    sig.send_later(SIGTERM, 0.8);
    SuperviseResult r = supervise(o, SuperviseContext{});
    std::string got = slurp(f);
    CHECK(got.find("child-USR1") != std::string::npos);
    CHECK(got.find("child-TERM") != std::string::npos);
    CHECK(got.find("grandchild-TERM") != std::string::npos);
    CHECK(r.end.got_term);
    CHECK(r.end.exit_code == 7);
    std::remove(f.c_str());
}

TEST_CASE("supervise: the pre-timeout signal runs the hook once, signal and command", "[launcher]") {
    Signals sig;
    std::string f = tmp_path("hook");
    std::string dir = tmp_path("log");
    std::remove(f.c_str());
    Options o = base({"/bin/bash", "-c",
                      "trap 'echo program-saved >> " + f + "' USR2; for i in $(seq 40); do sleep 0.05; done"});
    o.checkpoint_cmd = "echo \"cmd-$GPUTOPO_CHECKPOINT_TRIGGER\" >> " + f + "; sleep 0.3";
    o.checkpoint_signal = SIGUSR2;
    o.checkpoint_signal_given = true;
    o.trigger_signal = SIGUSR1;
    EventLog log;
    std::string err;
    REQUIRE(log.open(dir, EventContext{"77", "0", 0, 0, "n1"}, err));
    SuperviseContext ctx;
    ctx.log = &log;
    sig.send_later(SIGUSR1, 0.3);
    sig.send_later(SIGUSR1, 0.45);  // while the hook runs: folded into it
    SuperviseResult r = supervise(o, ctx);
    CHECK(r.hooks_run == 1);
    CHECK(r.hooks_late == 0);
    std::string got = slurp(f);
    CHECK(got.find("cmd-pre_timeout") != std::string::npos);
    CHECK(got.find("program-saved") != std::string::npos);
    std::string events = slurp(log.path());
    CHECK(events.find("\"event\": \"hook_start\"") != std::string::npos);
    CHECK(events.find("\"event\": \"hook_end\"") != std::string::npos);
    CHECK(events.find("\"event\": \"hook_skipped\"") != std::string::npos);
    CHECK(events.find("\"ok\": true") != std::string::npos);
    std::remove(f.c_str());
    std::remove(log.path().c_str());
    rmdir(dir.c_str());
}

TEST_CASE("supervise: a hook too slow for its deadline is reported", "[launcher]") {
    Signals sig;
    std::string dir = tmp_path("late");
    Options o = base({"/bin/bash", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"});
    o.checkpoint_cmd = "sleep 2";
    o.kill_wait_s = 1.2;  // SIGTERM now, SIGKILL in 1.2 s
    EventLog log;
    std::string err;
    REQUIRE(log.open(dir, EventContext{"78", "0", 0, 0, "n1"}, err));
    SuperviseContext ctx;
    ctx.log = &log;
    sig.send_later(SIGTERM, 0.3);
    SuperviseResult r = supervise(o, ctx);
    CHECK(r.hooks_run == 1);
    CHECK(r.hooks_late == 1);
    CHECK(r.end.got_term);
    std::string events = slurp(log.path());
    CHECK(events.find("\"event\": \"hook_deadline_missed\"") != std::string::npos);
    CHECK(events.find("\"trigger\": \"term\"") != std::string::npos);
    std::remove(log.path().c_str());
    rmdir(dir.c_str());
}

TEST_CASE("supervise: periodic checkpoints", "[launcher]") {
    std::string f = tmp_path("periodic");
    std::remove(f.c_str());
    Options o = base({"/bin/sh", "-c", "sleep 1.3"});
    o.checkpoint_cmd = "echo tick >> " + f;
    o.checkpoint_every_s = 0.25;
    SuperviseResult r = supervise(o, SuperviseContext{});
    std::string got = slurp(f);
    size_t ticks = 0;
    for (size_t p = got.find("tick"); p != std::string::npos; p = got.find("tick", p + 1)) ++ticks;
    CHECK(ticks >= 2);
    CHECK(ticks <= 6);
    CHECK(r.hooks_run == static_cast<int>(ticks));
    std::remove(f.c_str());
}

TEST_CASE("supervise: a timer weeks away gives a positive poll timeout (finding 10)", "[launcher]") {
    // 24.8 days is INT_MAX milliseconds: beyond it the old cast went negative
    // (poll then waits forever and later timers never fire).
    CHECK(poll_timeout_ms(30 * 86400.0) > 0);
    CHECK(poll_timeout_ms(30 * 86400.0) == 3600 * 1000 + 1);
    CHECK(poll_timeout_ms(1e300) == 3600 * 1000 + 1);
    CHECK(poll_timeout_ms(0) == 1);
    CHECK(poll_timeout_ms(0.25) == 251);
    CHECK(poll_timeout_ms(-1) == -1);
}

TEST_CASE("supervise: the program does not outlive a killed launcher", "[launcher]") {
    // A stand-in launcher starts the program and dies at once (as from SIGKILL):
    // the program must go too (proctrack/linuxproc would lose it otherwise).
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t launcher = fork();
    REQUIRE(launcher >= 0);
    if (launcher == 0) {
        close(fds[0]);
        SpawnOptions so;
        so.capture_stderr = false;
        Child c = spawn_child({"/bin/sleep", "30"}, so);
        ssize_t w = write(fds[1], &c.pid, sizeof c.pid);
        (void)w;
        _exit(0);
    }
    close(fds[1]);
    pid_t prog = -1;
    REQUIRE(read(fds[0], &prog, sizeof prog) == static_cast<ssize_t>(sizeof prog));
    close(fds[0]);
    waitpid(launcher, nullptr, 0);
    REQUIRE(prog > 0);
    // Gone or a zombie (PID 1 here may not reap) within 5 s.
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
        std::ifstream st("/proc/" + std::to_string(prog) + "/stat");
        std::string pid, comm, state;
        gone = !(st >> pid >> comm >> state) || state == "Z";
        if (!gone) usleep(50000);
    }
    CHECK(gone);
    if (!gone) kill(prog, SIGKILL);
}

TEST_CASE("supervise: a program that dies of SIGTERM before the launcher's own SIGTERM is read: still a SIGTERM end", "[launcher]") {
    // As at a time limit with proctrack/linuxproc: Slurm's SIGTERM reaches the
    // program first; the launcher's arrives a moment after the program is reaped.
    Signals sig;
    Options o = base({"/bin/sh", "-c", "kill -TERM $$"});
    sig.send_later(SIGTERM, 0.2);
    SuperviseResult r = supervise(o, SuperviseContext{});
    REQUIRE(r.started);
    CHECK_FALSE(r.end.exited);
    CHECK(r.end.term_signal == SIGTERM);
    CHECK(r.end.got_term);
}

TEST_CASE("supervise: once the program has ended, SIGTERM is held, so a requeue is recorded before the step ends", "[launcher]") {
    sigset_t before;
    sigprocmask(SIG_SETMASK, nullptr, &before);
    sigset_t unblock = termination_signals();
    sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
    SuperviseResult r = supervise(base({"/bin/true"}), SuperviseContext{});
    sigset_t after;
    sigprocmask(SIG_SETMASK, nullptr, &after);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    REQUIRE(r.started);
    CHECK(sigismember(&after, SIGTERM) == 1);
    CHECK(sigismember(&after, SIGINT) == 1);
    CHECK(sigismember(&after, SIGHUP) == 1);
    CHECK(sigismember(&after, SIGUSR1) == sigismember(&before, SIGUSR1));
}
