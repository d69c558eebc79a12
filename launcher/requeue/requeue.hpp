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
// Only a job that asked is requeued: sbatch --requeue (recorded by the shipped
// job_submit.lua, or Requeue=1 where JobRequeue=0) or gputopo-launch --requeue
// yes; Slurm's JobRequeue=1 default alone does not count.
#pragma once

#include <string>
#include <vector>

#include "launcher/failure/classify.hpp"
#include "launcher/options/options.hpp"

namespace gputopo::launch {

struct RequeueInputs {
    bool in_batch_job = false;      // SLURM_JOB_ID set and the job is a batch job
    bool requeue_allowed = false;   // the job's Requeue=1
    bool requeue_asked = false;     // the job asked (launcher/root_cause.hpp job_asked_requeue)
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
};

bool retryable(FailureClass cls, const Options& o);

// Pure.
RequeueDecision decide_requeue(const Classification& c, const Options& o, const RequeueInputs& in);

// The Comment record. parse: the nodes of every record in the comment (a
// comment can hold more than one), the last valid back-off. merge: one record
// with those nodes plus `node` (if not there) and backoff (0: none), in place
// of all old ones, keeping the rest of the comment.
struct ExclusionRecord {
    std::vector<std::string> nodes;
    double backoff_s = 0;
};
ExclusionRecord parse_exclusion_record(const std::string& comment);
std::string merge_exclusion_record(const std::string& comment, const std::string& node, double backoff_s);

// Where this node's ranks elect their leader. node_state_base: the
// --node-state-dir option with %n replaced by the node name, else /dev/shm
// when writable, else TMPDIR (or /tmp). private_state_dir: BASE/gputopo-launch.UID,
// made 0700; "" unless it is a directory (not a symlink) this user owns with
// no group or other access, since anyone can pre-create a name in /dev/shm.
std::string node_state_base(const std::string& option, const std::string& node, const std::string& tmpdir);
std::string private_state_dir(const std::string& base);
// The bases to try, in order (issue 20, H4): --node-state-dir (%n expanded)
// when given, /dev/shm when writable, TMPDIR, /tmp; no duplicates.
std::vector<std::string> node_state_bases(const std::string& option, const std::string& node, const std::string& tmpdir);
// The first base whose BASE/gputopo-launch.UID is usable (private_state_dir):
// another user who pre-creates the name in /dev/shm only moves this user to
// the next base. "" when none is usable, with `note` naming what was refused.
std::string first_private_state_dir(const std::vector<std::string>& bases, std::string* note = nullptr);
// first_private_state_dir(node_state_bases(option, node, tmpdir)): the one
// directory the leader claim, the GPU exchange and the error file use.
std::string node_private_dir(const std::string& option, const std::string& node, const std::string& tmpdir,
                             std::string* note = nullptr);

// Leader election among the ranks of one attempt: true for the first caller
// with this key in `dir` (O_CREAT|O_EXCL|O_NOFOLLOW). True also when the dir is
// "" or unusable (then slurmctld arbitrates). A claim older than stale_after_s
// belongs to an earlier job with the same id and is taken over.
bool claim_leadership(const std::string& dir, const std::string& key, double stale_after_s = 300);
// Removes this directory's claims older than stale_after_s (at most 4096
// entries a call): each claim made after a job's end clears earlier jobs' ones,
// so claims do not pile up in /dev/shm with no epilog (claim_leadership calls it).
void sweep_stale_claims(const std::string& dir, double stale_after_s);
// Removes a claim made with claim_leadership (its owner is done).
void release_claim(const std::string& dir, const std::string& key);

struct RequeueResult {
    bool requeued = false;
    bool lost_race = false;         // another rank requeued first
    std::string message;
};
// Effects: Comment record (when a node is to be excluded or a back-off set),
// then scontrol requeue.
RequeueResult perform_requeue(const std::string& job_id, const RequeueDecision& d);

}  // namespace gputopo::launch
