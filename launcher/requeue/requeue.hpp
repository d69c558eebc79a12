// Bounded requeue with bad nodes kept out of the next attempt.
//
// Slurm 22.05 lets ExcNodeList change only while a job is pending, so the
// launcher cannot exclude a node of its own running job. The mechanism:
//  1. the leader records the node to exclude (and a back-off) in the job's
//     Comment as "gputopo:exclude=n2,n5;backoff=60" (kept next to any text the
//     user put there; goes through slurmctld, so no shared file system),
//  2. then runs `scontrol requeue JOB`,
//  3. slurmctld runs EpilogSlurmctld (etc/epilog_slurmctld_gputopo.sh) for the
//     requeued job while it is COMPLETING|REQUEUED; the script reads the
//     record and runs `scontrol update JobId=JOB ExcNodeList=<old+new>
//     [StartTime=now+BACKOFF]`, which 22.05 accepts in that state.
// One requeue per failure, not per rank: only ranks with a retryable class
// try; on one node, the first to create an O_EXCL file in this user's private
// directory (/dev/shm/gputopo-launch.UID, or --node-state-dir) goes on; with --state-dir (shared), the first in the whole job;
// across nodes, slurmctld decides: after the first `scontrol requeue` the job
// is no longer running and the others' requeue fails ("pending"), so they
// exit quietly. The budget: SLURM_RESTART_COUNT (unset = 0) < --max-restarts.
// Only a job that asked is requeued: sbatch --requeue (requeue_asked.hpp: the
// shipped job_submit.lua's record, Requeue=1 where JobRequeue=0, the SubmitLine,
// SBATCH_REQUEUE, the script's #SBATCH lines) or gputopo-launch --requeue yes;
// Slurm's JobRequeue=1 default alone does not count.
#pragma once

#include <string>
#include <vector>

#include "launcher/failure/classify.hpp"
#include "launcher/options/options.hpp"
#include "launcher/state/job_comment.hpp"
#include "launcher/state/node_state.hpp"

namespace gputopo::launch {

struct RequeueInputs {
    bool in_batch_job = false;      // SLURM_JOB_ID set and the job is a batch job
    bool requeue_allowed = false;   // the job's Requeue=1
    bool requeue_asked = false;     // the job asked (launcher/requeue/requeue_asked.hpp requeue_asked)
    std::string asked_sources;      // RequeueAsked::explain(): what was read when it did not
    int restart_count = 0;          // SLURM_RESTART_COUNT, 0 when unset
    std::string node;               // this node (SLURMD_NODENAME)
};

enum class RequeueAction { None, Requeue, BudgetExhausted, NotAllowed };
const char* requeue_action_name(RequeueAction a);

struct RequeueDecision {
    RequeueAction action = RequeueAction::None;
    std::string exclude_node;       // "" none
    double backoff_s = 0;           // 0: Slurm's own hold
    std::string message;            // one line for the user, "gputopo: ..."
    int restart_count = -1;         // the attempt that failed (SLURM_RESTART_COUNT); -1 unknown
};

bool retryable(FailureClass cls, const Options& o);

// Pure.
RequeueDecision decide_requeue(const Classification& c, const Options& o, const RequeueInputs& in);

// The Comment record (gputopo:exclude=): launcher/state/job_comment.hpp
// parse_exclusion_record, merge_exclusion_record.

struct RequeueResult {
    bool requeued = false;
    bool lost_race = false;         // another rank requeued first
    std::string message;
};
// Effects: Comment record (when a node is to be excluded or a back-off set),
// then scontrol requeue. A job requeued since attempt d.restart_count (by
// Slurm: a node failure, an expedited requeue, launcher/requeue/expedite.hpp)
// is not requeued again: lost_race.
RequeueResult perform_requeue(const std::string& job_id, const RequeueDecision& d);

}  // namespace gputopo::launch
