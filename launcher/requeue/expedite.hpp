// Slurm 25.11's expedited requeue (sbatch --requeue=expedite, allowed where
// slurm.conf has SlurmctldParameters=enable_expedited_requeue), and how the
// launcher cooperates with it (Slurm's src/slurmctld/job_mgr.c, 25.11-26.05):
//  - such a job shows "ExpeditedRequeue=Yes" in `scontrol show job` (no
//    environment variable marks it);
//  - Slurm requeues it itself on a node failure, and on ANY nonzero exit of
//    the batch script (_set_job_requeue_exit_value); when no node's epilog
//    failed, that requeue ends in REQUEUE_HOLD ("holding expedited requeue
//    ... as no epilogs failed"): a user error would wait, held, for a person;
//  - a requeue of such a job (Slurm's or `scontrol requeue`) makes it eligible
//    at once (begin time 0): the job may run again within a second, while the
//    old attempt's launchers are still ending.
// So, in an expedited job:
//  - an end gputopo makes final (a user error, the reserved exit code 78; the
//    restart budget spent; `gputopo run` stopping) sets the job's Requeue to 0
//    first (`scontrol update JobId=N Requeue=0`): Slurm's exit-code requeue
//    honours --no-requeue before expedite, the job ends FAILED with its exit
//    code, never held;
//  - gputopo requeues only the attempt it ran in: a job whose restart count
//    moved on was requeued already (by Slurm, on a node failure): no second
//    requeue (requeued_since, used by perform_requeue).
#pragma once

#include <string>

#include "launcher/failure/events.hpp"
#include "launcher/requeue/requeue_asked.hpp"
#include "launcher/requeue/slurm_ctl.hpp"

namespace gputopo::launch {

// Pure, never throw.
// True when `scontrol show job` output (the multi-line form) carries
// ExpeditedRequeue=Yes on the line of the job's flags (a line of Key=Yes|No
// words only, the form Slurm prints them in: free text such as the job's name
// or Comment cannot pose as it).
bool expedited_in_show_job(const std::string& show_job);
// True when the job record `now` shows that the attempt numbered
// `restart_count` (its SLURM_RESTART_COUNT) is over: the job was requeued
// since (its restart count is higher). False when unknown.
bool requeued_since(const JobInfo& now, int restart_count);

struct FinalEnd {
    bool expedited = false;     // the job asked --requeue=expedite
    bool requeue_cleared = false;  // Requeue=0 was set
    std::string message;        // "" when there was nothing to do
};
// The attempt `restart_count` of `job_id` ends for good (`why`: the class or
// the reason, for the message). In an expedited job, sets Requeue=0 so Slurm
// neither requeues nor holds it; elsewhere does nothing beyond one
// `scontrol show job`. At most three commands, each bounded by `run`.
FinalEnd settle_final_end(const std::string& job_id, int restart_count, const std::string& why,
                          const SlurmCommand& run);
// The same with the live commands; the message (when there is one) goes to
// stderr and to `log` as a "final_end" event.
FinalEnd settle_final_end(const std::string& job_id, int restart_count, const std::string& why, EventLog& log);

}  // namespace gputopo::launch
