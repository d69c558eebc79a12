#include "run/spare_check.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>

#include "launcher/child/child.hpp"
#include "launcher/requeue/slurm_ctl.hpp"

namespace gputopo::launch::job {

namespace {

constexpr const char* kCheckStepName = "gputopo-spare-check";

double mono_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The check's last non-empty line in `text` (srun's own "srun: ..." lines
// only when there is no other), at most 200 characters.
std::string last_line(const std::string& text) {
    std::istringstream in(text);
    std::string line, last, last_srun;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        (line.rfind("srun: ", 0) == 0 ? last_srun : last) = line;
    }
    return (last.empty() ? last_srun : last).substr(0, 200);
}

struct Running {
    Child child;
    size_t index = 0;
    std::string err;  // the check's stderr
    bool done = false;
};

// Reads what `r`'s stderr has now (non-blocking), relaying it to ours.
void take_output(Running& r) {
    if (r.child.stderr_fd < 0) return;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(r.child.stderr_fd, buf, sizeof buf);
        if (n <= 0) return;
        ssize_t w = ::write(2, buf, size_t(n));
        (void)w;
        r.err.append(buf, size_t(n));
        if (r.err.size() > 16384) r.err.erase(0, r.err.size() - 16384);
    }
}

// Cancels the check steps still in the job (a check killed at its timeout leaves its task).
void cancel_check_steps(const std::string& job_id) {
    CommandResult r = run_command({"squeue", "-h", "-s", "-j", job_id, "-o", "%i %j"}, 10);
    std::istringstream in(r.output);
    std::string step, name;
    while (in >> step >> name)
        if (name == kCheckStepName) run_command({"scancel", "--signal=KILL", step}, 10);
}

// Runs CMD on every node whose verdict is still ok, all at once, each bounded by timeout_s.
void run_command_checks(std::vector<SpareVerdict>& v, const std::string& cmd, double timeout_s, const std::string& job_id) {
    std::vector<Running> runs;
    const double start = mono_now();
    for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].ok) continue;
        Running r;
        r.index = i;
        r.child = spawn_child(spare_check_argv(v[i].node, cmd), SpawnOptions{});
        if (r.child.pid < 0) {
            v[i].ok = false;
            v[i].reason = "cannot start srun: " + r.child.error;
            continue;
        }
        if (r.child.stderr_fd >= 0) ::fcntl(r.child.stderr_fd, F_SETFL, O_NONBLOCK);
        runs.push_back(std::move(r));
    }
    bool killed_any = false;
    for (size_t left = runs.size(); left > 0;) {
        ::usleep(50 * 1000);
        const double elapsed = mono_now() - start;
        for (auto& r : runs) {
            if (r.done) continue;
            take_output(r);
            int status = 0;
            pid_t p = ::waitpid(r.child.pid, &status, WNOHANG);
            SpareVerdict& sv = v[r.index];
            if (p == r.child.pid) {
                sv.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                if (!sv.ok) {
                    std::string line = last_line(r.err);
                    sv.reason = "--spare-check ended with " +
                                (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                                   : "signal " + std::to_string(WTERMSIG(status))) +
                                (line.empty() ? "" : ": " + line);
                }
            } else if (elapsed > timeout_s) {
                signal_group(r.child.pid, SIGKILL);
                ::waitpid(r.child.pid, &status, 0);
                sv.ok = false;
                sv.reason = "--spare-check did not end within --spare-check-timeout " + std::to_string(int(timeout_s)) + " s";
                killed_any = true;
            } else {
                continue;
            }
            sv.seconds = mono_now() - start;
            take_output(r);
            if (r.child.stderr_fd >= 0) ::close(r.child.stderr_fd);
            r.done = true;
            --left;
        }
    }
    if (killed_any) cancel_check_steps(job_id);
}

}  // namespace

std::string unusable_state(const std::string& out) {
    size_t p = out.find("State=");
    if (p == std::string::npos) return "";
    std::string state = out.substr(p + 6, out.find_first_of(" \n", p) - p - 6);
    for (const char* bad : {"DRAIN", "DOWN", "FAIL", "NOT_RESPONDING", "POWER"})
        if (state.find(bad) != std::string::npos) return "State=" + state;
    return "";
}

std::vector<std::string> spare_check_argv(const std::string& node, const std::string& cmd) {
    return {"srun", "--nodelist=" + node, "--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--job-name=" + std::string(kCheckStepName),
            "--kill-on-bad-exit=1", "/bin/sh", "-c", cmd};
}

std::vector<SpareVerdict> check_spares(const std::vector<std::string>& nodes, const std::string& cmd,
                                       double timeout_s, const std::string& job_id) {
    // One bounded RPC for every node's state, one line per node.
    std::string list;
    for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
    const double t0 = mono_now();
    CommandResult r = run_command({"scontrol", "show", "node", "-o", list}, 10);
    std::map<std::string, std::string> line_of;
    std::istringstream in(r.status == 0 ? r.output : "");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("NodeName=", 0) == 0) line_of[line.substr(9, line.find(' ') - 9)] = line;
    std::vector<SpareVerdict> v;
    for (const auto& n : nodes) {
        SpareVerdict sv;
        sv.node = n;
        auto l = line_of.find(n);
        sv.reason = l == line_of.end() ? "" : unusable_state(l->second);  // unknown: usable
        sv.ok = sv.reason.empty();
        if (!sv.ok) sv.reason = "Slurm has it " + sv.reason;
        sv.seconds = mono_now() - t0;
        v.push_back(sv);
    }
    if (!cmd.empty()) run_command_checks(v, cmd, timeout_s, job_id);
    return v;
}

}  // namespace gputopo::launch::job
