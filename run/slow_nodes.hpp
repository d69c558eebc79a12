// Slow nodes: a node that still makes progress, but slower than the others
// (a throttled GPU, a degraded link, a CPU quota), found from the ranks'
// heartbeats and, when asked, swapped for a spare at the program's next
// checkpoint.
//
// What tells the slow node apart. In data parallelism every rank waits for the
// slowest in each step's collective, so every rank's step counter advances at
// the same pace: the step rate alone cannot name the node. What differs is the
// time a rank spends in its own work (forward, backward's compute, the
// optimizer: what does not wait for another rank): the slow node's ranks take
// longer for the same step, the others wait for them inside the collective.
// The Python helper counts it (gputopo_run.busy(), a context manager around
// the part of the step that does not wait, or heartbeat(step, busy=SECONDS)
// with a time the program measures itself, e.g. CUDA events) and writes the
// total in the heartbeat file's fifth field. A rank's rate in a window is its
// steps per busy second; without busy reports from every rank, steps per
// wall-clock second (which finds a slow node only when the ranks do not
// synchronise every step).
//
// Windows: every `window_s` the rates since the last window are taken, a
// node's rate is its slowest rank's, and a node whose rate is below
// `fraction` x the median node rate (for an even count, the upper of the two
// middle ones) is slow in that window. A node slow in `windows` consecutive
// windows is flagged; a window in which some rank made no progress (a
// checkpoint, the start) judges no one and breaks no streak. A flagged node
// that is not slow for `windows` consecutive windows is no longer flagged.
//
// Replacement (`replace`): once a node is flagged and a spare is left, the
// step ends right after the next checkpoint the program reports
// (gputopo_run.report_checkpoint: the report file changes), so the restart
// resumes from it and nothing past it is lost; the node's slot goes to a
// spare as for a failed node.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run/heartbeat.hpp"

namespace gputopo::launch {
class EventLog;
}

namespace gputopo::launch::job {

enum class SlowAction { Off, Report, Replace };
const char* slow_action_name(SlowAction a);  // "off", "report", "replace"

struct SlowPolicy {
    SlowAction action = SlowAction::Report;  // --slow-nodes
    double fraction = 0.5;                   // --slow-fraction: slow below this x the median rate
    int windows = 3;                         // --slow-windows: consecutive slow windows to flag a node
    double window_s = 60;                    // --slow-window: length of one window
};

struct NodeRate {
    std::string node;
    double rate = 0;     // steps per busy second (or per second: basis "wall")
    long long steps = 0; // its slowest rank's steps in the window
};

// One judged window.
struct SlowWindow {
    std::vector<NodeRate> rates;   // slot order
    double median = 0;
    std::string basis;             // "busy" or "wall"
    std::vector<std::string> slow; // nodes below fraction x median in this window
    std::vector<std::string> flagged_now;    // nodes flagged by this window
    std::vector<std::string> recovered_now;  // flagged nodes no longer slow
    // "n1=9.81,n2=2.03": the slow nodes first, then the others, at most `limit` (then ",... (N nodes)").
    std::string rates_text(size_t limit = 16) const;
};

// The windows and streaks; pure (fed with the tracker's beats and a clock).
class SlowNodes {
public:
    SlowNodes(SlowPolicy policy, std::vector<std::string> slots, int tasks_per_node);
    // A judged window once `window_s` has passed since the last one; nullopt otherwise
    // (also for a window that judges no one: some rank made no progress).
    std::optional<SlowWindow> observe(const std::vector<RankBeat>& beats, double now);
    const std::vector<std::string>& flagged() const { return flagged_; }
    int first_rank(const std::string& node) const;  // of the node's slot; -1 not a slot
    const SlowPolicy& policy() const { return policy_; }

private:
    struct Mark {
        long long progress = -1;
        double busy = -1;
    };
    SlowPolicy policy_;
    std::vector<std::string> slots_;
    int tasks_per_node_;
    double window_start_ = -1;
    std::vector<Mark> marks_;
    std::map<std::string, int> slow_streak_, ok_streak_;
    std::vector<std::string> flagged_;
};

// The checkpoint report as last seen: its mtime and first line.
struct ReportState {
    double mtime = -1;
    std::string text;
    bool operator==(const ReportState& o) const { return mtime == o.mtime && text == o.text; }
    bool operator!=(const ReportState& o) const { return !(*this == o); }
};
ReportState read_report_state(const std::string& report_path);

// SlowNodes in a running step: logs a "slow_window" event for each window with
// a slow node (the slow nodes' rates, the median), a "slow_node" event for each
// node flagged (node, rates, median, what happens next) and "slow_node_recovered", and says
// when to end the step to replace a flagged node (a verdict with slow = true).
class SlowWatch {
public:
    SlowWatch(const SlowPolicy& policy, const std::vector<std::string>& slots, int tasks_per_node,
              std::string report_path, EventLog& log);
    // `spares_left`: a flagged node is replaced only while a spare is left.
    std::optional<HangVerdict> check(const std::vector<RankBeat>& beats, double now, size_t spares_left);

private:
    SlowNodes nodes_;
    std::string report_path_;
    EventLog& log_;
    std::optional<ReportState> report_at_flag_;  // the report when the first node still flagged was flagged
};

}  // namespace gputopo::launch::job
