#include "run/heartbeat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "run/run_files.hpp"

namespace gputopo::launch::job {

Beat parse_beat(const std::string& text, double mtime) {
    Beat b;
    b.exists = true;
    b.mtime = mtime;
    size_t i = 0;
    long long p = 0;
    while (i < text.size() && i < 15 && text[i] >= '0' && text[i] <= '9') p = p * 10 + (text[i++] - '0');
    if (i == 0 || i >= text.size() || text[i] != ' ') return b;
    // The time after it must be a number: a file that only starts with digits is not ours.
    const std::string rest = text.substr(i + 1, 40);
    char* end = nullptr;
    const double t = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str() || !std::isfinite(t) || t < 0) return b;
    b.progress = p;
    // Optional: " c train.py:57" (the helper's writer thread).
    const std::string tail = end;
    if (tail.size() >= 3 && tail[0] == ' ' && (tail[1] == 'c' || tail[1] == 'u') && tail[2] == ' ') {
        b.state = tail[1];
        size_t i = 3;
        for (; i < tail.size() && b.where.size() < 80; ++i) {
            const char ch = tail[i];
            if (ch == '\n' || ch == ' ') break;
            b.where += (ch >= 0x21 && ch < 0x7f) ? ch : '?';
        }
        // Optional: " 12.345" the busy seconds so far (gputopo_run.busy()).
        if (i < tail.size() && tail[i] == ' ') {
            const std::string num = tail.substr(i + 1, 24);
            char* bend = nullptr;
            const double busy = std::strtod(num.c_str(), &bend);
            if (bend != num.c_str() && (*bend == '\0' || *bend == '\n') && std::isfinite(busy) && busy >= 0 && busy <= 1e9)
                b.busy = busy;
        }
    }
    return b;
}

Beat read_beat(const std::string& path) {
    double mtime = -1;
    auto text = read_own_file(path, 256, &mtime);
    if (!text) return Beat{};
    return parse_beat(*text, mtime);
}

BeatTracker::BeatTracker(int ranks, double created_unix) : ranks_(size_t(std::max(0, ranks))), created_(created_unix) {}

void BeatTracker::update(int rank, const Beat& b, double now) {
    if (rank < 0 || size_t(rank) >= ranks_.size() || !b.exists) return;
    RankBeat& r = ranks_[size_t(rank)];
    if (b.mtime < created_ && r.mtime < 0) return;  // a file of an earlier attempt
    if (b.mtime != r.mtime) {
        r.alive_seen = now;
        if (b.progress < 0) r.progress_seen = now;  // touched: every change is progress
        r.mtime = b.mtime;
    }
    if (b.progress >= 0) {
        r.state = b.state;
        r.where = b.where;
        r.busy = b.busy;
    }
    if (b.progress >= 0 && b.progress != r.progress) {
        r.progress = b.progress;
        r.progress_seen = now;
    }
    // Started: the helper's counter past 0 (a first step done), or a touched file.
    r.started = r.started || (b.progress < 0 ? r.mtime >= created_ : b.progress > 0);
    if (r.started && r.progress_seen < 0) r.progress_seen = now;
}

bool BeatTracker::all_started() const {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const RankBeat& r) { return r.started; });
}

namespace {

std::string node_of(const std::vector<std::string>& slots, int tasks_per_node, int rank) {
    const size_t slot = size_t(rank) / size_t(std::max(1, tasks_per_node));
    return slot < slots.size() ? slots[slot] : "";
}

// The suspects of a hang among the stalled ranks (all of them when no evidence picks fewer).
std::vector<int> suspects(const std::vector<RankBeat>& beats, const std::vector<int>& stalled, double now,
                          const HangPolicy& policy, std::string& why) {
    // Stopped living while others live.
    std::vector<int> dead;
    bool others_live = false;
    for (size_t r = 0; r < beats.size(); ++r) {
        const bool live = beats[r].alive_seen >= 0 && now - beats[r].alive_seen <= policy.alive_window_s;
        if (live) others_live = true;
        else if (beats[r].progress >= 0 && std::find(stalled.begin(), stalled.end(), int(r)) != stalled.end())
            dead.push_back(int(r));
    }
    if (!dead.empty() && others_live) {
        why = "its heartbeat writer stopped too (the process stopped or its node is unreachable) while the other ranks wait";
        return dead;
    }
    // Behind the others.
    long long lowest = -1, highest = -1;
    for (const auto& b : beats) {
        if (b.progress < 0) continue;
        lowest = lowest < 0 ? b.progress : std::min(lowest, b.progress);
        highest = std::max(highest, b.progress);
    }
    if (lowest >= 0 && lowest < highest) {
        std::vector<int> behind;
        for (int r : stalled)
            if (beats[size_t(r)].progress == lowest) behind.push_back(r);
        if (!behind.empty()) {
            why = "it stopped at step " + std::to_string(lowest) + ", the others reached step " + std::to_string(highest);
            return behind;
        }
    }
    // In its own code while others wait inside the framework (a collective): the one they wait for.
    bool others_wait = false;
    std::vector<int> own_code;
    for (int r : stalled) {
        if (beats[size_t(r)].state == 'c') others_wait = true;
        if (beats[size_t(r)].state == 'u') own_code.push_back(r);
    }
    if (others_wait && !own_code.empty() && own_code.size() < stalled.size()) {
        const RankBeat& b = beats[size_t(own_code.front())];
        why = "it is in its own code (" + (b.where.empty() ? std::string("?") : b.where) +
              ") while the other ranks wait inside the framework (a collective)";
        return own_code;
    }
    // Touched files: the stalest (its beats stopped first).
    std::vector<int> touched;
    for (int r : stalled)
        if (beats[size_t(r)].progress < 0) touched.push_back(r);
    if (!touched.empty()) {
        int stalest = touched.front();
        for (int r : touched)
            if (beats[size_t(r)].progress_seen < beats[size_t(stalest)].progress_seen) stalest = r;
        why = "its heartbeat stopped first";
        return {stalest};
    }
    why = "every rank stopped in the same step (" + std::to_string(lowest) + ") and keeps living";
    return stalled;
}

}  // namespace

std::optional<HangVerdict> judge_hang(const std::vector<RankBeat>& beats, double created_unix, double now,
                                      const HangPolicy& policy, const std::vector<std::string>& slots,
                                      int tasks_per_node) {
    if (policy.hang_timeout_s <= 0 || beats.empty()) return std::nullopt;
    std::vector<int> stalled, not_started;
    bool any_started = false;
    double worst = 0;
    for (size_t r = 0; r < beats.size(); ++r) {
        const RankBeat& b = beats[r];
        any_started = any_started || b.started;
        double silent = b.started ? now - b.progress_seen : now - created_unix;
        const double limit = b.started ? policy.hang_timeout_s : std::max(policy.startup_timeout_s, policy.hang_timeout_s);
        if (!b.started) not_started.push_back(int(r));
        if (silent > limit) {
            stalled.push_back(int(r));
            worst = std::max(worst, silent);
        }
    }
    if (stalled.empty()) return std::nullopt;
    HangVerdict v;
    v.silent_s = worst;
    std::string why;
    std::vector<int> who;
    const bool startup = std::any_of(stalled.begin(), stalled.end(), [&](int r) { return !beats[size_t(r)].started; });
    if (startup) {
        v.startup = true;
        for (int r : stalled)
            if (!beats[size_t(r)].started) who.push_back(r);
        why = any_started ? "it did not reach its first step within the startup timeout while others did"
                          : "no rank reached its first step within the startup timeout";
        if (!any_started) who = not_started;
    } else {
        who = suspects(beats, stalled, now, policy, why);
    }
    std::set<std::string> nodes;
    for (int r : who) nodes.insert(node_of(slots, tasks_per_node, r));
    const std::string what = v.startup ? "startup hang" : "hang";
    if (nodes.size() == 1 && !nodes.begin()->empty()) {
        v.rank = who.front();
        v.node = *nodes.begin();
        const RankBeat& b = beats[size_t(v.rank)];
        v.silent_s = b.started ? now - b.progress_seen : now - created_unix;
        v.evidence = what + ": rank " + std::to_string(v.rank) + " on " + v.node + " made no progress for " +
                     std::to_string(int(v.silent_s)) + " s; " + why;
    } else {
        v.evidence = what + ": " + std::to_string(stalled.size()) + " rank(s) made no progress for up to " +
                     std::to_string(int(worst)) + " s on " + std::to_string(nodes.size()) + " nodes; " + why +
                     "; no node to blame";
    }
    return v;
}

}  // namespace gputopo::launch::job
