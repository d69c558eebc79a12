// The ranks' heartbeats and what a silence means. A heartbeat file is either
// touched (its time is all it says), or written by the Python helper
// (python/gputopo_run.py) as "PROGRESS UNIX_TIME [STATE WHERE [BUSY]]": the training step the rank
// has reached, and a writer of the helper's own that rewrites it every second
// while the process lives. So a rank that is alive but makes no progress (in a
// collective, waiting for a peer) tells itself apart from one that stopped (the
// process stopped, the node frozen): its file keeps changing.
//
// The supervisor keeps, on its own clock, when each rank's progress and file
// last changed (BeatTracker), and judge_hang names the rank that hung:
//  - a rank that has not reached its first step is judged by the startup
//    timeout (imports, process-group init), not the hang timeout;
//  - of the ranks whose progress stopped, blame goes by evidence: first ranks
//    that stopped living (their file no longer changes while others' does), then
//    ranks behind the others (a lower step), then ranks in their own code while
//    the others wait inside the framework (a collective), and for touched files the stalest;
//    when the evidence points at no single node (every rank waits in the same
//    step), no node is blamed.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gputopo::launch::job {

struct Beat {
    bool exists = false;
    double mtime = -1;
    long long progress = -1;  // -1: the file carries no progress (touched)
    char state = '-';         // 'c': the rank's loop is inside the framework (a collective, backward); 'u': in the program's own code
    std::string where;        // "train.py:57": where the loop is (the helper's writer looks every second)
    double busy = -1;         // seconds the rank spent in its own work so far (gputopo_run.busy()); -1 not reported
};
// "PROGRESS UNIX_TIME [STATE WHERE [BUSY]]\n" (PROGRESS 0..10^15, BUSY 0..10^9 s); anything else is a touched file.
Beat parse_beat(const std::string& text, double mtime);
// Reads a rank's file (at most 256 bytes, no link, no FIFO, the user's own).
Beat read_beat(const std::string& path);

struct RankBeat {
    bool started = false;       // reached its first step in this step
    long long progress = -1;    // -1 unknown
    double progress_seen = -1;  // supervisor's clock: when the progress (touched: the file) last changed
    double alive_seen = -1;     // when the file last changed
    double mtime = -1;
    char state = '-';
    std::string where;
    double busy = -1;  // the rank's busy seconds so far (slow_nodes.hpp); -1 not reported
};

class BeatTracker {
public:
    // `created_unix`: when the step began (files older than that are a past attempt's).
    BeatTracker(int ranks, double created_unix);
    void restart_clock(double created_unix) { created_ = created_unix; }
    void update(int rank, const Beat& b, double now);
    const std::vector<RankBeat>& ranks() const { return ranks_; }
    bool all_started() const;
    double created() const { return created_; }

private:
    std::vector<RankBeat> ranks_;
    double created_;
};

struct HangPolicy {
    double hang_timeout_s = 0;     // 0: off
    double startup_timeout_s = 0;  // a rank before its first step
    double alive_window_s = 5;     // a file unchanged this long no longer lives
};

struct HangVerdict {
    int rank = -1;          // the rank blamed; -1 none
    std::string node;       // its node; "" none blamed
    double silent_s = 0;    // how long the blamed (else the stalest) rank made no progress
    bool startup = false;   // before the first step
    bool slow = false;      // not a hang: a slow node ended at a checkpoint to be replaced (slow_nodes.hpp)
    std::string evidence;   // one line
};

// nullopt: no rank is past its timeout. `slots`, `tasks_per_node` map ranks to nodes.
std::optional<HangVerdict> judge_hang(const std::vector<RankBeat>& beats, double created_unix, double now,
                                      const HangPolicy& policy, const std::vector<std::string>& slots,
                                      int tasks_per_node);

}  // namespace gputopo::launch::job
