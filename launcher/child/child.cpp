#include "launcher/child/child.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gputopo::launch {

const std::vector<int>& forwarded_signals() {
    static const std::vector<int> s = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT};
    return s;
}

sigset_t termination_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    return set;
}

void shield_from_termination() {
    sigset_t set = termination_signals();
    sigprocmask(SIG_BLOCK, &set, nullptr);
}

Child spawn_child(const std::vector<std::string>& argv, const SpawnOptions& opt) {
    Child c;
    if (argv.empty()) {
        c.error = "gputopo: no program to run (expected: gputopo-launch [OPTIONS] -- PROGRAM [ARGS...])";
        return c;
    }
    int fds[2] = {-1, -1};
    if (opt.capture_stderr && pipe2(fds, O_CLOEXEC) != 0) {
        c.error = std::string("gputopo: cannot create a pipe: ") + std::strerror(errno);
        return c;
    }
    int out_fds[2] = {-1, -1};
    if (opt.capture_stdout && pipe2(out_fds, O_CLOEXEC) != 0) {
        c.error = std::string("gputopo: cannot create a pipe: ") + std::strerror(errno);
        if (fds[0] >= 0) close(fds[0]), close(fds[1]);
        return c;
    }
    // Prepare everything that allocates before fork.
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        c.error = std::string("gputopo: cannot fork: ") + std::strerror(errno);
        if (fds[0] >= 0) close(fds[0]), close(fds[1]);
        if (out_fds[0] >= 0) close(out_fds[0]), close(out_fds[1]);
        return c;
    }
    if (pid == 0) {
        setpgid(0, 0);
        // The program is in its own process group, which proctrack/linuxproc
        // loses once the launcher is gone: if the launcher dies (SIGKILL, OOM),
        // the program goes with it instead of running on outside the step.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int s : forwarded_signals()) sigaction(s, &dfl, nullptr);
        sigaction(SIGCHLD, &dfl, nullptr);
        sigaction(SIGPIPE, &dfl, nullptr);
        if (opt.ignore_term) {
            struct sigaction ign {};
            ign.sa_handler = SIG_IGN;
            sigaction(SIGTERM, &ign, nullptr);
            sigaction(SIGINT, &ign, nullptr);
        }
        for (int sig : opt.ignore) {
            struct sigaction ign {};
            ign.sa_handler = SIG_IGN;
            sigaction(sig, &ign, nullptr);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        if (fds[1] >= 0) dup2(fds[1], 2);
        if (out_fds[1] >= 0) dup2(out_fds[1], 1);
        for (const auto& kv : opt.extra_env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
        execvp(args[0], args.data());
        int err = errno;
        const char* msg1 = "gputopo: cannot run '";
        const char* msg3 = "': ";
        const char* msg4 = std::strerror(err);
        ssize_t w = write(2, msg1, strlen(msg1));
        w = write(2, args[0], strlen(args[0]));
        w = write(2, msg3, strlen(msg3));
        w = write(2, msg4, strlen(msg4));
        w = write(2, "\n", 1);
        (void)w;
        _exit(err == ENOENT ? 127 : 126);
    }
    setpgid(pid, pid);  // also from the parent: no race with an early signal
    c.pid = pid;
    if (fds[1] >= 0) {
        close(fds[1]);
        c.stderr_fd = fds[0];
    }
    if (out_fds[1] >= 0) {
        close(out_fds[1]);
        c.stdout_fd = out_fds[0];
    }
    return c;
}

void signal_group(pid_t pgid, int sig) {
    if (pgid <= 0) return;
    if (kill(-pgid, sig) != 0 && errno == ESRCH) kill(pgid, sig);
}

}  // namespace gputopo::launch
