// Checkpoint hooks: when they run, where, and by when they must be done. Pure.
//
// Triggers: Slurm's pre-timeout signal (--signal=USR1@SECS reaches every
// task, i.e. every launcher; the signal is --trigger-signal), SIGTERM at the
// time limit or on preemption (if no pre-timeout hook already ran), and a
// periodic timer (--checkpoint-every DURATION | auto). One trigger runs the
// hook once; a trigger while a hook runs is folded into it.
// A command hook runs on rank 0 (--checkpoint-ranks=0), on each node's local
// rank 0 (node) or on every rank (all); a signal hook reaches every rank's
// program. Deadline: pre-timeout and periodic = the job's end time + KillWait
// (when SIGKILL comes); SIGTERM = now + KillWait.
#pragma once

#include <string>

#include "launcher/options/options.hpp"

namespace gputopo::launch {

enum class Trigger { PreTimeout, Term, Periodic };
const char* trigger_name(Trigger t);  // "pre_timeout", "term", "periodic"

struct YoungDaly {
    double interval_s = 0;
    double cost_s = 0;       // C: the hook's duration
    double mtbf_job_s = 0;   // M = MTBF per node / nodes
    int nodes = 1;
    std::string explain() const;  // "interval 1h2m = sqrt(2 * C 60s * M 3000h/...)"
};
// sqrt(2 * C * M), M = mtbf_node_s / nodes; never shorter than 2 * C.
YoungDaly young_daly(double cost_s, double mtbf_node_s, int nodes);

bool runs_command_hook(HookRanks ranks, int rank, int local_rank);

// Seconds since the epoch by which the hook must be done; -1 unknown.
double hook_deadline(Trigger t, double now, double job_end_time, double kill_wait_s);

// "1h2m3s", "45.0s"
std::string format_duration(double seconds);

}  // namespace gputopo::launch
