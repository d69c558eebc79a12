#include "run/slow_nodes.hpp"

#include <algorithm>
#include <cstdio>

#include "launcher/failure/events.hpp"
#include "run/run_files.hpp"

namespace gputopo::launch::job {

const char* slow_action_name(SlowAction a) {
    switch (a) {
        case SlowAction::Off: return "off";
        case SlowAction::Report: return "report";
        case SlowAction::Replace: return "replace";
    }
    return "?";
}

namespace {

std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

}  // namespace

std::string SlowWindow::rates_text(size_t limit) const {
    std::vector<const NodeRate*> order;
    for (const auto& r : rates)
        if (std::find(slow.begin(), slow.end(), r.node) != slow.end()) order.push_back(&r);
    for (const auto& r : rates)
        if (std::find(slow.begin(), slow.end(), r.node) == slow.end()) order.push_back(&r);
    std::string out;
    for (size_t i = 0; i < order.size() && i < limit; ++i) out += (out.empty() ? "" : ",") + order[i]->node + "=" + num(order[i]->rate);
    if (order.size() > limit) out += ",... (" + std::to_string(order.size()) + " nodes)";
    return out;
}

SlowNodes::SlowNodes(SlowPolicy policy, std::vector<std::string> slots, int tasks_per_node)
    : policy_(policy), slots_(std::move(slots)), tasks_per_node_(std::max(1, tasks_per_node)) {}

std::optional<SlowWindow> SlowNodes::observe(const std::vector<RankBeat>& beats, double now) {
    auto restart_window = [&] {
        window_start_ = now;
        marks_.assign(beats.size(), Mark{});
        for (size_t r = 0; r < beats.size(); ++r) marks_[r] = Mark{beats[r].progress, beats[r].busy};
    };
    if (window_start_ < 0 || marks_.size() != beats.size()) {
        restart_window();
        return std::nullopt;
    }
    const double wall = now - window_start_;
    if (wall < policy_.window_s) return std::nullopt;
    // Every rank's steps and busy seconds in the window; the window judges no one when a rank made no progress.
    std::vector<long long> steps(beats.size());
    std::vector<double> busy(beats.size());
    bool all_busy = true;
    for (size_t r = 0; r < beats.size(); ++r) {
        const Mark& m = marks_[r];
        if (m.progress < 0 || beats[r].progress <= m.progress) {
            restart_window();
            return std::nullopt;
        }
        steps[r] = beats[r].progress - m.progress;
        busy[r] = (m.busy >= 0 && beats[r].busy >= 0) ? beats[r].busy - m.busy : -1;
        if (busy[r] <= 0) all_busy = false;
    }
    SlowWindow w;
    w.basis = all_busy ? "busy" : "wall";
    for (size_t s = 0; s < slots_.size(); ++s) {
        NodeRate nr{slots_[s], -1, 0};
        for (size_t r = s * size_t(tasks_per_node_); r < std::min(beats.size(), (s + 1) * size_t(tasks_per_node_)); ++r) {
            const double rate = double(steps[r]) / (all_busy ? busy[r] : wall);
            if (nr.rate < 0 || rate < nr.rate) {
                nr.rate = rate;
                nr.steps = steps[r];
            }
        }
        if (nr.rate >= 0) w.rates.push_back(nr);
    }
    restart_window();
    if (w.rates.size() < 2) return std::nullopt;  // no other node to compare with
    std::vector<double> sorted;
    for (const auto& r : w.rates) sorted.push_back(r.rate);
    std::sort(sorted.begin(), sorted.end());
    w.median = sorted[sorted.size() / 2];
    for (const auto& r : w.rates) {
        const bool slow = r.rate < policy_.fraction * w.median;
        const bool flagged = std::find(flagged_.begin(), flagged_.end(), r.node) != flagged_.end();
        if (slow) {
            w.slow.push_back(r.node);
            ok_streak_[r.node] = 0;
            if (++slow_streak_[r.node] >= policy_.windows && !flagged) {
                flagged_.push_back(r.node);
                w.flagged_now.push_back(r.node);
            }
        } else {
            slow_streak_[r.node] = 0;
            if (flagged && ++ok_streak_[r.node] >= policy_.windows) {
                flagged_.erase(std::remove(flagged_.begin(), flagged_.end(), r.node), flagged_.end());
                ok_streak_[r.node] = 0;
                w.recovered_now.push_back(r.node);
            }
        }
    }
    return w;
}

int SlowNodes::first_rank(const std::string& node) const {
    auto it = std::find(slots_.begin(), slots_.end(), node);
    return it == slots_.end() ? -1 : int(it - slots_.begin()) * tasks_per_node_;
}

ReportState read_report_state(const std::string& report_path) {
    ReportState st;
    if (report_path.empty()) return st;
    if (auto text = read_own_file(report_path, 4096, &st.mtime)) st.text = text->substr(0, text->find('\n'));
    return st;
}

SlowWatch::SlowWatch(const SlowPolicy& policy, const std::vector<std::string>& slots, int tasks_per_node,
                     std::string report_path, EventLog& log)
    : nodes_(policy, slots, tasks_per_node), report_path_(std::move(report_path)), log_(log) {}

namespace {

const NodeRate* rate_of(const SlowWindow& w, const std::string& node) {
    for (const auto& r : w.rates)
        if (r.node == node) return &r;
    return nullptr;
}

}  // namespace

std::optional<HangVerdict> SlowWatch::check(const std::vector<RankBeat>& beats, double now, size_t spares_left) {
    const SlowPolicy& p = nodes_.policy();
    if (p.action == SlowAction::Off) return std::nullopt;
    const auto w = nodes_.observe(beats, now);
    const char* unit = w && w->basis == "busy" ? "steps per busy second" : "steps per second";
    if (w && !w->slow.empty())
        log_.write(Event("slow_window").add("slow_nodes", int(w->slow.size())).add("rates", w->rates_text(w->slow.size() + 1))
                       .add("median", w->median).add("basis", w->basis));
    if (w) {
        for (const auto& node : w->flagged_now) {
            const NodeRate* r = rate_of(*w, node);
            const std::string next = p.action != SlowAction::Replace ? "reported only (--slow-nodes=report)"
                                     : spares_left == 0              ? "kept: no spare left"
                                                                     : "replaced by a spare at the next reported checkpoint";
            std::fprintf(stderr, "gputopo run: slow node %s: %s %s, below %s x the median %s for %d windows of %s s; %s\n",
                         node.c_str(), num(r ? r->rate : 0).c_str(), unit, num(p.fraction).c_str(), num(w->median).c_str(),
                         p.windows, num(p.window_s).c_str(), next.c_str());
            log_.write(Event("slow_node").add("node", node).add("rate", r ? r->rate : 0.0).add("median", w->median)
                           .add("basis", w->basis).add("rates", w->rates_text()).add("fraction", p.fraction)
                           .add("windows", p.windows).add("window_s", p.window_s).add("next", next));
        }
        for (const auto& node : w->recovered_now)
            log_.write(Event("slow_node_recovered").add("node", node).add("median", w->median).add("basis", w->basis)
                           .add("rates", w->rates_text()));
    }
    if (nodes_.flagged().empty()) {
        report_at_flag_.reset();
        return std::nullopt;
    }
    if (p.action != SlowAction::Replace || spares_left == 0) return std::nullopt;
    if (!report_at_flag_) {
        report_at_flag_ = read_report_state(report_path_);
        return std::nullopt;
    }
    const ReportState now_report = read_report_state(report_path_);
    if (now_report == *report_at_flag_ || now_report.text.empty()) return std::nullopt;
    HangVerdict v;
    v.slow = true;
    v.node = nodes_.flagged().front();
    v.rank = nodes_.first_rank(v.node);
    v.evidence = "slow node " + v.node + ": its ranks advanced below " + num(p.fraction) + " x the median rate for " +
                 std::to_string(p.windows) + " windows of " + num(p.window_s) + " s; the step ends at the checkpoint " +
                 now_report.text + " to replace it";
    log_.write(Event("slow_node_replace").add("node", v.node).add("checkpoint", now_report.text));
    return v;
}

}  // namespace gputopo::launch::job
