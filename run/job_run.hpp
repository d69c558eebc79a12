// `gputopo run`: the job-level supervisor (one process, in the batch script).
//
//   split the allocation (node_pool) -> srun the step on the slots
//   (--kill-on-bad-exit, arbitrary distribution so slot i holds ranks
//   i*T..i*T+T-1) -> watch srun and the heartbeats -> on its end classify
//   (launcher/classify, on srun's exit and stderr), blame a node (srun's
//   lines, or the silent rank's slot), decide (node_pool::decide_restart),
//   record the excluded node in the Comment (launcher/requeue's record), and
//   relaunch, shrink, requeue (launcher/requeue) or stop.
// Bounds: srun is killed kill_timeout_s after the step is to end (a rank
// ended, a hang, a signal); every scontrol/scancel runs with a time limit.
// Every decision is an event in DIR/gputopo-launch.JOB.job.jsonl.
#pragma once

#include "run/job_options.hpp"

namespace gputopo::launch::job {

// Returns the exit status of the job (the last step's, 0 on success).
int run_job(const JobOptions& o);

}  // namespace gputopo::launch::job
