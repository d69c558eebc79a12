#include "run/step_end.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

namespace gputopo::launch::job {

namespace {

const std::regex kTaskLine(R"(srun: error: ([^\s:]+): tasks? ([0-9,-]{1,400}): (.*))");
const std::regex kExitCode(R"(^Exited with exit code (\d{1,3})$)");
const std::regex kNodeFailure(R"(srun: error: Node failure on ([^\s,]+))");
const std::regex kLaunchFailed(R"(srun: error: Task launch for \S+ failed on node ([^\s:]+))");

// A number of at most 9 digits (the regexes allow no more): never throws, never overflows.
int small_number(const std::string& digits) {
    int n = 0;
    for (char ch : digits) n = n * 10 + (ch - '0');
    return n;
}

// "0,2-5" -> {0,0}, {2,5}: at most 64 ranges, each number at most 9 digits, lo <= hi.
bool rank_ranges(const std::string& text, std::vector<std::pair<int, int>>& out) {
    std::istringstream in(text);
    for (std::string part; std::getline(in, part, ',');) {
        const size_t dash = part.find('-');
        const std::string lo = part.substr(0, dash), hi = dash == std::string::npos ? lo : part.substr(dash + 1);
        auto digits = [](const std::string& s) {
            return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
        };
        if (!digits(lo) || !digits(hi) || out.size() >= 64) return false;
        const int a = small_number(lo), b = small_number(hi);
        if (b < a) return false;
        out.emplace_back(a, b);
    }
    return !out.empty();
}

int signal_of(const std::string& what) {
    static const std::pair<const char*, int> names[] = {{"Killed", 9},  {"Terminated", 15}, {"Segmentation fault", 11},
                                                        {"Aborted", 6}, {"Bus error", 7},   {"Floating point exception", 8},
                                                        {"Hangup", 1},  {"Interrupt", 2}};
    for (const auto& [name, sig] : names)
        if (what.rfind(name, 0) == 0) return sig;
    return 0;
}

bool event_of(const std::string& line, SrunEvent& e) {
    std::smatch m;
    if (std::regex_search(line, m, kNodeFailure) || std::regex_search(line, m, kLaunchFailed)) {
        e.node = m[1];
        e.node_lost = true;
    } else if (std::regex_search(line, m, kTaskLine)) {
        e.node = m[1];
        if (!rank_ranges(m[2], e.ranks)) return false;
        e.rank = e.ranks.front().first;
        const std::string what = m[3];
        std::smatch c;
        if (std::regex_search(what, c, kExitCode)) {
            e.exit_code = small_number(c[1]);
            if (e.exit_code > 255) return false;
        } else if (int sig = signal_of(what)) {
            e.exited = false;
            e.term_signal = sig;
        } else {
            return false;
        }
    } else {
        return false;
    }
    e.line = line;
    return true;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// One rank's end as srun reported it, classified on the rank's own stderr.
struct RankEnd {
    const SrunEvent* event = nullptr;
    int rank = -1;
    size_t order = 0;  // position of srun's line
    Classification cls;
    std::string exception;
};

std::vector<RankEnd> rank_ends(const StepEndFacts& f, const ClassifyPolicy& policy) {
    std::vector<RankEnd> ends;
    std::vector<bool> seen;
    const size_t ranks = f.slots.size() * size_t(std::max(1, f.tasks_per_node));
    seen.assign(ranks, false);
    for (size_t i = 0; i < f.events.size(); ++i) {
        const SrunEvent& e = f.events[i];
        if (e.rank < 0) continue;
        for (const auto& [lo, hi] : e.ranks)
        for (long long r = lo; r <= hi && size_t(r) < ranks; ++r) {
            if (seen[size_t(r)]) continue;
            seen[size_t(r)] = true;
            RankEnd re;
            re.event = &e;
            re.rank = int(r);
            re.order = i;
            ChildEnd end;
            end.exited = e.exited;
            end.exit_code = e.exit_code;
            end.term_signal = e.term_signal;
            auto t = f.rank_tails.find(re.rank);
            if (t != f.rank_tails.end()) end.stderr_tail = t->second;
            auto x = f.rank_exceptions.find(re.rank);
            re.exception = x != f.rank_exceptions.end() ? x->second : find_exception_line(end.stderr_tail);
            // The exception line is evidence even when the tail no longer holds it.
            if (!re.exception.empty() && end.stderr_tail.find(re.exception) == std::string::npos)
                end.stderr_tail += re.exception + "\n";
            re.cls = classify(end, policy);
            ends.push_back(std::move(re));
        }
    }
    return ends;
}

std::string node_of_rank(const StepEndFacts& f, int rank) {
    const size_t slot = size_t(rank) / size_t(std::max(1, f.tasks_per_node));
    return slot < f.slots.size() ? f.slots[slot] : "";
}

StepVerdict rank_verdict(const StepEndFacts& f, const RankEnd& r) {
    StepVerdict v;
    v.rank = r.rank;
    v.node = r.event->node.empty() ? node_of_rank(f, r.rank) : r.event->node;
    v.cls = r.cls;
    v.exception = r.exception;
    v.status = r.event->exited ? r.event->exit_code : 128 + r.event->term_signal;
    if (v.status == 0) v.status = 1;
    return v;
}

// The rank's own error: its exit status, and the exception when it printed one.
StepVerdict user_error(const StepEndFacts& f, const RankEnd& r) {
    StepVerdict v = rank_verdict(f, r);
    v.cls.cls = FailureClass::UserError;
    v.cls.local = false;
    v.cls.evidence = "rank " + std::to_string(r.rank) + " on " + v.node + ": " +
                     (r.exception.empty() ? r.cls.evidence : r.exception + " (" + r.cls.evidence + ")");
    return v;
}

}  // namespace

std::vector<SrunEvent> srun_events(const std::string& text) {
    std::vector<SrunEvent> out;
    std::istringstream in(text);
    std::string line;
    bool teardown = false;
    while (std::getline(in, line) && out.size() < 4096) {
        SrunEvent e;
        if (line.size() < 512 && event_of(line, e)) {
            e.teardown = teardown;
            out.push_back(std::move(e));
        } else if (line.rfind("srun: ", 0) == 0 &&
                   (line.find("Terminating StepId") != std::string::npos || line.find("Force Terminated") != std::string::npos ||
                    line.find("Job step aborted") != std::string::npos)) {
            teardown = true;
        }
    }
    return out;
}

StepVerdict root_cause(const StepEndFacts& f, const ClassifyPolicy& policy) {
    // 1. A node lost: srun's lines first, then Slurm's node state.
    for (const auto& e : f.events)
        if (e.node_lost && contains(f.slots, e.node)) {
            StepVerdict v;
            v.node = e.node;
            v.cls.cls = FailureClass::NodeFault;
            v.cls.local = true;
            v.cls.evidence = e.line;
            v.status = f.srun_status ? f.srun_status : 1;
            return v;
        }
    for (const auto& n : f.slots)
        if (contains(f.slurm_lost, n)) {
            StepVerdict v;
            v.node = n;
            v.cls.cls = FailureClass::NodeFault;
            v.cls.local = true;
            v.cls.evidence = "Slurm reports " + n + " down or not responding";
            v.status = f.srun_status ? f.srun_status : 1;
            return v;
        }
    // 2. The ranks' own ends.
    std::vector<RankEnd> ends = rank_ends(f, policy);
    auto first = [&](auto pred) -> const RankEnd* {
        for (const auto& r : ends)
            if (pred(r)) return &r;
        return nullptr;
    };
    if (const RankEnd* r = first([](const RankEnd& e) { return e.cls.cls == FailureClass::GpuFault; })) return rank_verdict(f, *r);
    if (const RankEnd* r = first([](const RankEnd& e) { return e.cls.cls == FailureClass::UserError; })) return user_error(f, *r);
    // An exception of its own; else the first rank in srun's order that failed on its own: an
    // exit status is the program's, a signal may be the node's (srun's teardown kills come after).
    if (const RankEnd* r = first([](const RankEnd& e) { return e.cls.cls == FailureClass::Failed && !e.exception.empty(); }))
        return user_error(f, *r);
    // srun's own SIGTERM/SIGKILL after it began ending the step is teardown, not a cause.
    if (const RankEnd* r = first([](const RankEnd& e) {
            return e.cls.cls == FailureClass::Failed &&
                   (e.event->exited || !e.event->teardown || (e.event->term_signal != 9 && e.event->term_signal != 15));
        })) {
        if (r->event->exited) return user_error(f, *r);
        StepVerdict v = rank_verdict(f, *r);
        v.cls.local = true;
        return v;
    }
    if (const RankEnd* r = first([](const RankEnd& e) { return e.cls.cls == FailureClass::NodeFault; })) return rank_verdict(f, *r);
    // 3. Only peers' losses: the node none of whose ranks ended is the one srun lost.
    if (!ends.empty()) {
        std::vector<std::string> silent;
        for (const auto& n : f.slots) {
            bool reported = false;
            for (const auto& r : ends) reported = reported || node_of_rank(f, r.rank) == n;
            if (!reported) silent.push_back(n);
        }
        StepVerdict v = rank_verdict(f, ends.front());
        if (silent.size() == 1) {
            v.node = silent.front();
            v.rank = -1;
            v.cls.cls = FailureClass::NodeFault;
            v.cls.local = true;
            v.cls.evidence = "no end reported for the ranks of " + v.node + " while their peers lost them (" +
                             ends.front().cls.evidence + ")";
        } else {
            v.node.clear();
            v.rank = -1;
        }
        return v;
    }
    // 4. Nothing about a rank or node: srun's own status.
    StepVerdict v;
    ChildEnd end;
    end.exit_code = f.srun_status;
    v.cls = classify(end, policy);
    v.status = f.srun_status;
    return v;
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
