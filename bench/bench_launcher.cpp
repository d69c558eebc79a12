// gputopo-launch speed, measured side by side in one run:
//  - launcher start overhead: `gputopo-launch -- /bin/true` against `/bin/true`
//    run directly, interleaved, medians (target: < 5 ms more);
//  - signal-to-hook-start latency: SIGUSR1 (Slurm's pre-timeout signal) sent
//    to a running launcher -> the program receives the checkpoint signal
//    (signal hook), and -> the checkpoint command has started (command hook,
//    through /bin/sh) (target: < 10 ms).
// The launcher is BUILD/gputopo-launch next to BUILD/bench/ (or $GPUTOPO_LAUNCH).
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

double now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int g_fd = -1;
void on_usr2(int) {
    double t = now();
    ssize_t w = write(g_fd, &t, sizeof t);
    (void)w;
}

// Child modes: "--program FD": waits for SIGUSR2 and writes the time to FD.
// "--stamp FD": writes the time to FD at once (the checkpoint command).
int child_main(int argc, char** argv) {
    g_fd = std::atoi(argv[2]);
    if (std::strcmp(argv[1], "--stamp") == 0) {
        on_usr2(0);
        return 0;
    }
    signal(SIGUSR1, SIG_IGN);
    struct sigaction sa {};
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, nullptr);
    ssize_t w = write(g_fd, "R", 1);  // ready
    (void)w;
    for (int i = 0; i < 3000; ++i) usleep(10000);
    (void)argc;
    return 0;
}

pid_t spawn(const std::vector<std::string>& argv) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    pid_t p = fork();
    if (p == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2);
        execv(a[0], a.data());
        _exit(127);
    }
    return p;
}

// Wall time of one run; *cpu gets its CPU time (user + system, the
// process and the children it waited for), which the machine's load does not
// inflate the way it inflates wall time.
double run_once(const std::vector<std::string>& argv, double* cpu = nullptr) {
    double t0 = now();
    pid_t p = spawn(argv);
    int st = 0;
    rusage ru{};
    wait4(p, &st, 0, &ru);
    if (cpu)
        *cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    return now() - t0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0;
    size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    return v[i];
}

bool read_exact(int fd, void* buf, size_t n, double timeout_s) {
    double end = now() + timeout_s;
    char* p = static_cast<char*>(buf);
    while (n > 0 && now() < end) {
        ssize_t r = read(fd, p, n);
        if (r > 0) {
            p += r;
            n -= static_cast<size_t>(r);
        } else if (r < 0 && errno != EAGAIN && errno != EINTR) {
            return false;
        } else {
            usleep(100);
        }
    }
    return n == 0;
}

// One launcher; `reps` triggers; returns latencies (s) of the stamp writes.
std::vector<double> hook_latency(const std::string& launcher, const std::string& self, bool command, int reps) {
    std::vector<double> out;
    int fds[2];
    if (pipe(fds) != 0) return out;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    std::string fd = std::to_string(fds[1]);
    std::vector<std::string> argv = {launcher, "--gpu-topo", "none", "--trigger-signal", "USR1"};
    if (command) {
        argv.insert(argv.end(), {"--checkpoint-signal", "none", "--checkpoint-cmd", "exec " + self + " --stamp " + fd});
    } else {
        argv.insert(argv.end(), {"--checkpoint-signal", "USR2"});
    }
    argv.insert(argv.end(), {"--", self, "--program", fd});
    pid_t p = spawn(argv);
    char ready = 0;
    if (!read_exact(fds[0], &ready, 1, 10)) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
        return out;
    }
    for (int i = 0; i < reps; ++i) {
        usleep(command ? 20000 : 5000);  // let the previous hook end
        double t0 = now();
        kill(p, SIGUSR1);
        double t1 = 0;
        if (!read_exact(fds[0], &t1, sizeof t1, 5)) break;
        out.push_back(t1 - t0);
    }
    kill(p, SIGTERM);
    waitpid(p, nullptr, 0);
    close(fds[0]);
    close(fds[1]);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 3 && (std::strcmp(argv[1], "--program") == 0 || std::strcmp(argv[1], "--stamp") == 0))
        return child_main(argc, argv);

    char self_buf[PATH_MAX] = {0};
    ssize_t n = readlink("/proc/self/exe", self_buf, sizeof self_buf - 1);
    std::string self = n > 0 ? std::string(self_buf, static_cast<size_t>(n)) : argv[0];
    std::string launcher;
    if (const char* e = std::getenv("GPUTOPO_LAUNCH")) launcher = e;
    else launcher = self.substr(0, self.rfind('/')) + "/../gputopo-launch";
    if (access(launcher.c_str(), X_OK) != 0) {
        std::fprintf(stderr, "bench_launcher: %s not found (build it: make all)\n", launcher.c_str());
        return 1;
    }
    // Outside Slurm, as a plain run: no SLURM_* in the way.
    for (const char* v : {"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES"}) unsetenv(v);

    const int reps = 200;
    std::vector<double> direct, wrapped, direct_cpu, wrapped_cpu;
    run_once({"/bin/true"});
    run_once({launcher, "--", "/bin/true"});
    for (int i = 0; i < reps; ++i) {
        double c = 0;
        direct.push_back(run_once({"/bin/true"}, &c));
        direct_cpu.push_back(c);
        wrapped.push_back(run_once({launcher, "--", "/bin/true"}, &c));
        wrapped_cpu.push_back(c);
    }
    double md = median(direct) * 1e3, mw = median(wrapped) * 1e3;
    double mdc = median(direct_cpu) * 1e3, mwc = median(wrapped_cpu) * 1e3;
    std::printf("launcher start overhead (%d runs each, interleaved; wall and CPU time medians):\n", reps);
    std::printf("  /bin/true directly:               wall %.3f ms, cpu %.3f ms\n", md, mdc);
    std::printf("  gputopo-launch -- /bin/true:      wall %.3f ms, cpu %.3f ms\n", mw, mwc);
    std::printf("  overhead: wall %.3f ms, cpu %.3f ms (target < 5 ms): %s\n", mw - md, mwc - mdc,
                (mw - md) < 5 ? "met" : ((mwc - mdc) < 5 ? "met in CPU time; wall time inflated by this machine's load" : "NOT met"));
    double load[1] = {0};
    if (getloadavg(load, 1) == 1) std::printf("  (load average %.1f on %ld CPUs)\n", load[0], sysconf(_SC_NPROCESSORS_ONLN));

    std::vector<double> sig = hook_latency(launcher, self, false, 100);
    std::vector<double> cmd = hook_latency(launcher, self, true, 50);
    if (sig.empty() || cmd.empty()) {
        std::fprintf(stderr, "bench_launcher: the hook latency runs failed\n");
        return 1;
    }
    std::printf("signal-to-hook-start latency (SIGUSR1 to the launcher):\n");
    std::printf("  signal hook (program gets SIGUSR2), %zu triggers: median %.3f ms, p95 %.3f ms\n", sig.size(),
                median(sig) * 1e3, percentile(sig, 0.95) * 1e3);
    std::printf("  command hook (/bin/sh -c CMD started), %zu triggers: median %.3f ms, p95 %.3f ms\n", cmd.size(),
                median(cmd) * 1e3, percentile(cmd, 0.95) * 1e3);
    bool met = percentile(sig, 0.95) * 1e3 < 10 && percentile(cmd, 0.95) * 1e3 < 10;
    std::printf("  target < 10 ms: %s\n", met ? "met" : "NOT met");
    return 0;
}
