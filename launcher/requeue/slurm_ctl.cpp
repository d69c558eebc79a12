#include "launcher/requeue/slurm_ctl.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <cstdlib>
#include <optional>

#include "launcher/child/child.hpp"
#include "step/framework_env.hpp"
#include "step/run_bounded.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/files.hpp"

namespace gputopo::launch {

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s, Signals sig) {
    sigset_t child_mask;
    if (sig == Signals::Shielded) child_mask = termination_signals();
    else sigemptyset(&child_mask);
    auto [status, output] = step::run_bounded(argv, timeout_s, &child_mask);
    CommandResult r;
    r.status = status;
    r.output = std::move(output);
    return r;
}

namespace {
// A decimal number of at most `max_digits` digits, the whole string; -1 otherwise.
long long parse_count(const std::string& s, size_t max_digits) {
    if (s.empty() || s.size() > max_digits) return -1;
    long long v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    return v;
}
}  // namespace

double parse_slurm_time(const std::string& text) {
    tm t{};
    const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &t);
    if (!end || *end) return -1;
    t.tm_isdst = -1;
    time_t v = mktime(&t);
    return v == static_cast<time_t>(-1) ? -1 : static_cast<double>(v);
}

double parse_kill_wait(const std::string& cfg) {
    size_t pos = 0;
    while ((pos = cfg.find("KillWait", pos)) != std::string::npos) {
        bool line_start = pos == 0 || cfg[pos - 1] == '\n';
        size_t eq = cfg.find('=', pos);
        size_t nl = cfg.find('\n', pos);
        if (line_start && eq != std::string::npos && (nl == std::string::npos || eq < nl)) {
            size_t i = eq + 1;
            while (i < cfg.size() && cfg[i] == ' ') ++i;
            size_t j = i;
            while (j < cfg.size() && std::isdigit(static_cast<unsigned char>(cfg[j]))) ++j;
            long long v = parse_count(cfg.substr(i, j - i), 9);
            return v < 0 ? -1 : static_cast<double>(v);
        }
        pos += 8;
    }
    return -1;
}

std::vector<std::string> squeue_job_argv(const std::string& job_id) {
    // SLURM_TIME_FORMAT from the user's environment would change EndTime.
    return {"env", "SLURM_TIME_FORMAT=standard", "squeue", "--noheader", "--jobs=" + job_id,
            "--Format=JobID:|,BatchFlag:|,Requeue:|,RestartCnt:|,EndTime:|,State:|,Comment:|"};
}

JobInfo parse_squeue_job(const std::string& out) {
    JobInfo j;
    std::vector<std::string> f;
    size_t pos = 0;
    for (int i = 0; i < 6; ++i) {
        size_t bar = out.find('|', pos);
        if (bar == std::string::npos) return j;
        f.push_back(out.substr(pos, bar - pos));
        pos = bar + 1;
    }
    // The comment: the rest, less the closing "|\n" (it may hold '|').
    std::string comment = out.substr(pos);
    while (!comment.empty() && (comment.back() == '\n' || comment.back() == '\r')) comment.pop_back();
    if (comment.empty() || comment.back() != '|') return j;
    comment.pop_back();
    // One job, one line (issue 20, H9): a second line (a heterogeneous job's
    // components, an array) would otherwise end up in the comment and be
    // written back by `scontrol update Comment=`. Such output is no job record.
    if (comment.find('\n') != std::string::npos || comment.find('\r') != std::string::npos) return j;
    for (const auto& v : f)
        if (v.find('\n') != std::string::npos) return j;  // not one job's line
    long long restarts = parse_count(f[3], 9);
    if (f[0].empty() || restarts < 0 || (f[1] != "0" && f[1] != "1") || (f[2] != "0" && f[2] != "1")) return j;
    j.known = true;
    j.batch = f[1] == "1";
    j.requeue_allowed = f[2] == "1";
    j.restarts = static_cast<int>(restarts);
    j.end_time = parse_slurm_time(f[4]);
    j.state = f[5];
    j.comment = comment == "(null)" ? std::string() : comment;
    return j;
}

std::string slurm_conf_value(const std::string& text, const std::string& key) {
    std::string want;
    for (char c : key) want += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? text.size() : nl + 1;
        size_t hash = line.find('#');
        if (hash != std::string::npos) line = line.substr(0, hash);
        size_t a = line.find_first_not_of(" \t");
        if (a == std::string::npos) continue;
        size_t eq = line.find('=', a);
        if (eq == std::string::npos) continue;
        std::string k = line.substr(a, eq - a);
        while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
        for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (k != want) continue;
        std::string v = line.substr(eq + 1);
        size_t b = v.find_first_not_of(" \t");
        if (b == std::string::npos) return "";
        v = v.substr(b);
        size_t e = v.find_first_of(" \t\r");
        return e == std::string::npos ? v : v.substr(0, e);
    }
    return "";
}

std::string local_conf_value(const char* key) {
    const char* env = std::getenv(env::kSlurmConf);
    std::string path = env && *env ? env : "/etc/slurm/slurm.conf";
    // SLURM_CONF is the user's: bounded, never blocking on a FIFO (issue 20, H8).
    std::optional<std::string> text = read_file_bounded(path, ReadLimits{kMaxConfigFileBytes, true});
    return text ? slurm_conf_value(*text, key) : std::string();
}

std::string local_proctrack_type() { return local_conf_value("ProctrackType"); }

double local_kill_wait() {
    std::string v = local_conf_value("KillWait");
    if (v.empty()) return -1;
    long long kw = parse_count(v, 6);
    return kw < 0 ? -1 : static_cast<double>(kw);
}

bool proctrack_signals_all(const std::string& t) {
    // proctrack/cgroup signals only slurmstepd's own children (the launcher),
    // every process of the step for SIGKILL alone (Slurm 22.05-24.11
    // proctrack_cgroup.c: "only signal slurm tasks unless signal is SIGKILL"):
    // the launcher must pass Slurm's signals on to its program there.
    return t == "proctrack/linuxproc";
}

JobInfo query_job(const std::string& job_id) {
    if (job_id.empty()) return {};
    CommandResult r = run_command(squeue_job_argv(job_id), 10);
    if (r.status != 0) return {};
    return parse_squeue_job(r.output);
}

double query_kill_wait() {
    CommandResult r = run_command({"scontrol", "show", "config"}, 10);
    if (r.status != 0) return -1;
    return parse_kill_wait(r.output);
}

}  // namespace gputopo::launch
