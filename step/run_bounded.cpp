#include "step/run_bounded.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace gputopo::step {

std::pair<int, std::string> run_bounded(const std::vector<std::string>& argv, double timeout_s, const sigset_t* blocked) {
    std::pair<int, std::string> r{-1, ""};
    if (argv.empty()) return r;
    sigset_t child_mask;
    if (blocked) child_mask = *blocked;
    else sigemptyset(&child_mask);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return r;
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return r;
    }
    if (pid == 0) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaction(s, &dfl, nullptr);
        sigprocmask(SIG_SETMASK, &child_mask, nullptr);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        execvp(args[0], args.data());
        _exit(127);
    }
    close(fds[1]);
    auto start = std::chrono::steady_clock::now();
    char buf[4096];
    bool timed_out = false;
    for (;;) {
        double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        int n = poll(&p, 1, static_cast<int>(left * 1000) + 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        if (r.second.size() < (1u << 20)) r.second.append(buf, static_cast<size_t>(got));
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!timed_out && WIFEXITED(st)) r.first = WEXITSTATUS(st);
    return r;
}

}  // namespace gputopo::step
