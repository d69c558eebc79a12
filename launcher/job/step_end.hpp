// What srun says when a step ends, and the heartbeats of its ranks. Pure.
//
// Blame: srun's first line about one task or node decides (later ones are the
// teardown of the others after --kill-on-bad-exit):
//   "srun: error: n3: task 2: Killed"               rank 2 on n3, signal 9
//   "srun: error: n3: task 2: Exited with exit code 78"
//   "srun: error: Node failure on n3"               n3 lost
//   "srun: error: Task launch for StepId=... failed on node n3: ..."
// The class itself comes from launcher/classify (one classifier).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gputopo::launch::job {

struct SrunBlame {
    std::string node;     // "" nothing found
    int rank = -1;        // -1 a node, not a task
    bool exited = true;   // false: killed by a signal
    int exit_code = 0;
    int term_signal = 0;
    bool node_lost = false;
    std::string line;     // the line that decided
};
SrunBlame blame_srun_output(const std::string& text);

// A heartbeat path of rank `rank`: every "%r" in the pattern replaced by the
// rank (a pattern without %r gets ".RANK" appended).
std::string heartbeat_path(const std::string& pattern, int rank);
// The pattern of one attempt: every "%a" replaced by the in-job attempt number
// (so a rank left running on a lost node cannot beat for its replacement).
std::string attempt_pattern(const std::string& pattern, int attempt);

// The rank whose last beat (unix seconds; a rank that has not beaten yet
// counts from `since`) is the oldest, when it is older than timeout_s at `now`.
struct StaleRank {
    int rank = -1;
    double silent_s = 0;
};
std::optional<StaleRank> stalest_rank(const std::vector<double>& last_beat, double since, double now, double timeout_s);

// Daly's checkpoint interval with the restart time R in the job MTBF
// (tau = sqrt(2 C (M + R)) [1 + sqrt(C/(2(M+R)))/3 + C/(18(M+R))] - C for
// C < 2(M+R), else M + R) and the fraction of wall time it wastes. C is what
// the program stalls for per checkpoint. An asynchronous checkpoint (the state
// copied to host memory in C, written to storage in the background) is durable
// P = `persist_s` after the stall ends: a failure then loses the work since the
// last durable one, on average (tau + C)/2 + P, and the next checkpoint waits
// for the previous write (tau + C >= P). A constant P does not move the
// optimum, so tau = max(Daly's, P - C) and
//   waste = C/tau + ((tau + C)/2 + P + R)/M   (blocking: P = 0; Daly's C/tau + (tau/2 + R)/M up to C/2M).
// `mtbf_job_s` = MTBF per node / nodes.
struct RestartWaste {
    double interval_s = 0;
    double waste = 0;  // 0..1
};
RestartWaste daly_with_restart(double checkpoint_cost_s, double mtbf_job_s, double restart_s, double persist_s = 0);

}  // namespace gputopo::launch::job
