// Whether a batch job asked for a requeue (sbatch --requeue), read from what
// the user typed, with or without gputopo's job_submit.lua. With Slurm's
// default JobRequeue=1 every batch job has Requeue=1, so the job record alone
// cannot tell `sbatch --requeue` from the default. The sources, in this order
// (the first that answers decides; sbatch's own precedence: command line over
// environment over script):
//   1. the job's Comment: "gputopo:requeue=asked", written by gputopo's
//      job_submit.lua; or Requeue=1 on a cluster whose JobRequeue is 0;
//   2. the job's SubmitLine (the sbatch command line): `scontrol show job`
//      shows it from Slurm 25.11, `sacct` wherever accounting keeps it;
//   3. SBATCH_REQUEUE / SBATCH_NO_REQUEUE in the batch job's environment
//      (what sbatch read them from);
//   4. the batch script's #SBATCH lines (`scontrol write batch_script JOB -`,
//      allowed to the job's owner).
// A job whose Requeue=0 cannot be requeued whatever it asked: nothing is read.
// The one place this is decided: gputopo-launch (launcher/run.cpp) and the
// job-level `gputopo run` call requeue_asked().
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/options/options.hpp"
#include "launcher/requeue/slurm_ctl.hpp"

namespace gputopo::launch {

struct RequeueAsked {
    bool asked = false;
    std::string by;                // the source that said so ("" when none did)
    std::vector<std::string> read; // each source read and what it gave, in order
    // "read: <source>: <what>; ...", then what the user and the site can do
    // (submit with #SBATCH --requeue; install gputopo's job_submit.lua or
    // accounting): for the message when the job did not ask.
    std::string explain() const;
};

// Runs a Slurm command (argv, timeout in s): run_command in production.
using SlurmCommand = std::function<CommandResult(const std::vector<std::string>&, double)>;

// Reads the sources above for `job_id` (`info`: its record, query_job;
// `env`: the batch job's environment; `job_requeue_conf`: slurm.conf's
// JobRequeue, "" unknown). At most three commands (scontrol show job, sacct,
// scontrol write batch_script), each bounded by `run`'s timeout, and only
// until one source answers.
RequeueAsked requeue_asked(const std::string& job_id, const JobInfo& info, const Getenv& env,
                           const std::string& job_requeue_conf, const SlurmCommand& run);
// The same with the live commands and this node's slurm.conf.
RequeueAsked requeue_asked(const std::string& job_id, const JobInfo& info, const Getenv& env);

// Parsers (pure, never throw), for the tests:
// sbatch's arguments (argv[1..], the script and its arguments after them):
// true for the last of --requeue[=expedite] / --no-requeue before the script, false,
// or nullopt when neither is there.
std::optional<bool> requeue_in_sbatch_args(const std::vector<std::string>& args);
// The SubmitLine of `scontrol show job -o` output ("" when absent).
std::string submit_line_of(const std::string& show_job);
// The #SBATCH lines of a batch script, as sbatch reads them (from the top,
// up to the first line that is neither blank nor a comment): the last of
// --requeue / --no-requeue, or nullopt.
std::optional<bool> requeue_in_script(const std::string& script);

}  // namespace gputopo::launch
