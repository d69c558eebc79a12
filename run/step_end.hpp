// How a step of `gputopo run` ended, and whose fault it was. Pure.
//
// srun's own lines about one task or node (any number, in any order: when a
// node dies its peers die of the lost rank, and srun may report them first):
//   "srun: error: n3: task 2: Killed"               rank 2 on n3, signal 9
//   "srun: error: n3: tasks 2-5: Exited with exit code 1"
//   "srun: error: Node failure on n3"               n3 lost
//   "srun: error: Task launch for StepId=... failed on node n3: ..."
// The root cause (root_cause) is read from every rank's own end, not from the
// order of srun's lines; the classes come from launcher/classify (one classifier).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/failure/classify.hpp"

namespace gputopo::launch::job {

struct SrunEvent {
    std::string node;
    int rank = -1;        // first rank of the line; -1 a node, not a task
    std::vector<std::pair<int, int>> ranks;  // "tasks 0,2-5": {0,0}, {2,5}
    bool exited = true;   // false: killed by a signal
    int exit_code = 0;
    int term_signal = 0;
    bool node_lost = false;
    bool teardown = false;  // after srun began ending the step ("Terminating StepId=..."): its own kills follow
    std::string line;
};
// Every such line of `text`, in order (at most 4096 lines, 64 rank ranges a line,
// ranks at most 10^9, exit codes at most 255: anything else is not srun's line).
std::vector<SrunEvent> srun_events(const std::string& text);

// What is known when srun is gone.
struct StepEndFacts {
    std::vector<SrunEvent> events;             // srun_events of srun's own lines
    std::map<int, std::string> rank_tails;     // what each rank wrote to stderr, last bytes (RankOutput)
    std::map<int, std::string> rank_exceptions;  // each rank's last Python exception line (RankOutput)
    std::vector<std::string> slots;            // the step's nodes, slot order
    int tasks_per_node = 1;
    std::vector<std::string> slurm_lost;       // slot nodes Slurm reports down / not responding
    int srun_status = 0;
};

struct StepVerdict {
    Classification cls;
    std::string node;       // "" none to blame
    int rank = -1;          // -1 a node (or none)
    int status = 0;         // the job's exit status for this end
    std::string exception;  // the Python exception the rank died of ("" none)
};

// The root cause, by evidence:
//  1. a node Slurm or srun reports lost (node_fault);
//  2. the ranks' own ends, each classified on its own stderr: a GPU fault, then a
//     user error (the reserved exit code, or an exception or exit status of the
//     rank's own: class user_error, the exception named), then a rank killed by
//     a signal first (srun's teardown kills the others after it), then a node
//     fault in a rank's own output. A peer_lost rank (it died of another) is
//     never the cause;
//  3. only peer_lost ranks: the node whose ranks never reported an end (srun
//     could not reach them), when it is one node;
//  4. else no node to blame (class of srun's status).
StepVerdict root_cause(const StepEndFacts& f, const ClassifyPolicy& policy);

// A heartbeat path of rank `rank`: every "%r" in the pattern replaced by the
// rank (a pattern without %r gets ".RANK" appended).
std::string heartbeat_path(const std::string& pattern, int rank);
// The pattern of one attempt: every "%a" replaced by the in-job attempt number
// (so a rank left running on a lost node cannot beat for its replacement).
std::string attempt_pattern(const std::string& pattern, int attempt);

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
