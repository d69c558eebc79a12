#include "launcher/slurm_ctl.hpp"

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
#include <fstream>
#include <sstream>

namespace gputopo::launch {

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
    CommandResult r;
    if (argv.empty()) return r;
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
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
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
        if (r.output.size() < (1u << 20)) r.output.append(buf, static_cast<size_t>(got));
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!timed_out && WIFEXITED(st)) r.status = WEXITSTATUS(st);
    return r;
}

std::map<std::string, std::string> parse_scontrol_record(const std::string& text) {
    std::map<std::string, std::string> out;
    // Key starts: at the beginning or after whitespace, [A-Z][A-Za-z0-9/:_]* followed by '='.
    std::vector<std::pair<size_t, size_t>> keys;  // key start, '=' position
    for (size_t i = 0; i < text.size(); ++i) {
        if (i > 0 && !std::isspace(static_cast<unsigned char>(text[i - 1]))) continue;
        if (!std::isupper(static_cast<unsigned char>(text[i]))) continue;  // Slurm keys start upper-case
        size_t j = i;
        while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '/' ||
                                   text[j] == ':' || text[j] == '_'))
            ++j;
        if (j < text.size() && text[j] == '=') keys.emplace_back(i, j);
    }
    for (size_t k = 0; k < keys.size(); ++k) {
        size_t vstart = keys[k].second + 1;
        size_t vend = k + 1 < keys.size() ? keys[k + 1].first : text.size();
        std::string v = text.substr(vstart, vend - vstart);
        while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
        std::string key = text.substr(keys[k].first, keys[k].second - keys[k].first);
        if (!out.count(key)) out[key] = v;
    }
    return out;
}

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
            if (j > i) return std::stod(cfg.substr(i, j - i));
            return -1;
        }
        pos += 8;
    }
    return -1;
}

JobInfo job_info_from_record(const std::map<std::string, std::string>& f) {
    JobInfo j;
    auto get = [&](const char* k) -> std::string {
        auto it = f.find(k);
        return it == f.end() ? std::string() : it->second;
    };
    if (get("JobId").empty()) return j;
    j.known = true;
    j.batch = get("BatchFlag") == "1";
    j.requeue_allowed = get("Requeue") == "1";
    std::string r = get("Restarts");
    j.restarts = (!r.empty() && std::isdigit(static_cast<unsigned char>(r[0]))) ? std::stoi(r) : 0;
    j.end_time = parse_slurm_time(get("EndTime"));
    j.comment = get("Comment");
    if (j.comment == "(null)") j.comment.clear();
    j.exc_nodes = get("ExcNodeList");
    if (j.exc_nodes == "(null)") j.exc_nodes.clear();
    j.state = get("JobState");
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

namespace {
std::string local_conf_value(const char* key) {
    const char* env = std::getenv("SLURM_CONF");
    std::string path = env && *env ? env : "/etc/slurm/slurm.conf";
    std::ifstream in(path);
    if (!in) return "";
    std::stringstream ss;
    ss << in.rdbuf();
    return slurm_conf_value(ss.str(), key);
}
}  // namespace

std::string local_proctrack_type() { return local_conf_value("ProctrackType"); }

double local_kill_wait() {
    std::string v = local_conf_value("KillWait");
    if (v.empty()) return -1;
    for (char c : v)
        if (c < '0' || c > '9') return -1;
    return v.size() < 7 ? std::stod(v) : -1;
}

bool proctrack_signals_all(const std::string& t) {
    return t == "proctrack/cgroup" || t == "proctrack/linuxproc";
}

JobInfo query_job(const std::string& job_id) {
    if (job_id.empty()) return {};
    CommandResult r = run_command({"scontrol", "show", "job", "-o", job_id}, 10);
    if (r.status != 0) return {};
    return job_info_from_record(parse_scontrol_record(r.output));
}

double query_kill_wait() {
    CommandResult r = run_command({"scontrol", "show", "config"}, 10);
    if (r.status != 0) return -1;
    return parse_kill_wait(r.output);
}

}  // namespace gputopo::launch
