#include "launcher/job/step_end.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

namespace gputopo::launch::job {

namespace {

const std::regex kTaskLine(R"(srun: error: ([^\s:]+): tasks? (\d+)(?:-\d+)?: (.*))");
const std::regex kExitCode(R"(Exited with exit code (\d+))");
const std::regex kNodeFailure(R"(srun: error: Node failure on ([^\s,]+))");
const std::regex kLaunchFailed(R"(srun: error: Task launch for \S+ failed on node ([^\s:]+))");

int signal_of(const std::string& what) {
    static const std::pair<const char*, int> names[] = {{"Killed", 9},  {"Terminated", 15}, {"Segmentation fault", 11},
                                                        {"Aborted", 6}, {"Bus error", 7},   {"Floating point exception", 8},
                                                        {"Hangup", 1},  {"Interrupt", 2}};
    for (const auto& [name, sig] : names)
        if (what.rfind(name, 0) == 0) return sig;
    return 0;
}

bool blame_line(const std::string& line, SrunBlame& b) {
    std::smatch m;
    if (std::regex_search(line, m, kNodeFailure) || std::regex_search(line, m, kLaunchFailed)) {
        b.node = m[1];
        b.node_lost = true;
    } else if (std::regex_search(line, m, kTaskLine)) {
        b.node = m[1];
        b.rank = std::stoi(m[2]);
        const std::string what = m[3];
        std::smatch c;
        if (std::regex_search(what, c, kExitCode)) {
            b.exit_code = std::stoi(c[1]);
        } else if (int sig = signal_of(what)) {
            b.exited = false;
            b.term_signal = sig;
        } else {
            return false;
        }
    } else {
        return false;
    }
    b.line = line;
    return true;
}

}  // namespace

SrunBlame blame_srun_output(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        SrunBlame b;
        if (line.size() < 512 && blame_line(line, b)) return b;
    }
    return {};
}

namespace {
std::string replace_all(const std::string& text, const std::string& what, const std::string& with) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, what.size(), what) == 0) {
            out += with;
            i += what.size() - 1;
        } else {
            out += text[i];
        }
    }
    return out;
}
}  // namespace

std::string heartbeat_path(const std::string& pattern, int rank) {
    const std::string r = std::to_string(rank);
    if (pattern.find("%r") == std::string::npos) return pattern + "." + r;
    return replace_all(pattern, "%r", r);
}

std::string attempt_pattern(const std::string& pattern, int attempt) {
    return replace_all(pattern, "%a", std::to_string(attempt));
}

std::optional<StaleRank> stalest_rank(const std::vector<double>& last_beat, double since, double now, double timeout_s) {
    std::optional<StaleRank> worst;
    for (size_t i = 0; i < last_beat.size(); ++i) {
        double silent = now - std::max(last_beat[i], since);
        if (silent > timeout_s && (!worst || silent > worst->silent_s)) worst = StaleRank{static_cast<int>(i), silent};
    }
    return worst;
}

RestartWaste daly_with_restart(double checkpoint_cost_s, double mtbf_job_s, double restart_s, double persist_s) {
    RestartWaste w;
    const double c = checkpoint_cost_s > 0 ? checkpoint_cost_s : 1;
    const double r = restart_s > 0 ? restart_s : 0;
    const double p = persist_s > 0 ? persist_s : 0;
    const double m = mtbf_job_s > 0 ? mtbf_job_s : 1;
    const double mr = m + r;
    w.interval_s = c < 2 * mr ? std::sqrt(2 * c * mr) * (1 + std::sqrt(c / (2 * mr)) / 3 + c / (18 * mr)) - c : mr;
    w.interval_s = std::max(w.interval_s, p - c);
    const double lost = p > 0 ? (w.interval_s + c) / 2 + p : w.interval_s / 2;
    w.waste = std::min(1.0, c / w.interval_s + (lost + r) / m);
    return w;
}

}  // namespace gputopo::launch::job
