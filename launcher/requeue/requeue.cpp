#include "launcher/requeue/requeue.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "launcher/requeue/expedite.hpp"
#include "launcher/requeue/slurm_ctl.hpp"
#include "topo/core/strings.hpp"

namespace gputopo::launch {

const char* requeue_action_name(RequeueAction a) {
    switch (a) {
        case RequeueAction::None: return "none";
        case RequeueAction::Requeue: return "requeue";
        case RequeueAction::BudgetExhausted: return "budget_exhausted";
        case RequeueAction::NotAllowed: return "not_allowed";
    }
    return "none";
}

bool retryable(FailureClass cls, const Options& o) {
    std::string name = failure_class_name(cls);
    return std::find(o.requeue_on.begin(), o.requeue_on.end(), name) != o.requeue_on.end();
}

RequeueDecision decide_requeue(const Classification& c, const Options& o, const RequeueInputs& in) {
    RequeueDecision d;
    std::string what = std::string(failure_class_name(c.cls)) + " (" + c.evidence + ")";
    if (c.cls == FailureClass::Success) return d;
    if (!retryable(c.cls, o)) {
        d.message = "gputopo: " + what + " is not retryable; not requeueing";
        return d;
    }
    if (!o.requeue) {
        d.action = RequeueAction::NotAllowed;
        d.message = "gputopo: " + what + " is retryable, but requeue is off (--no-requeue)";
        return d;
    }
    if (!in.in_batch_job || !in.requeue_allowed) {
        d.action = RequeueAction::NotAllowed;
        d.message = "gputopo: " + what + " is retryable, but the job cannot be requeued (" +
                    (!in.in_batch_job ? std::string("not a batch job")
                                      : std::string("its Requeue=0: submitted with --no-requeue, or on a cluster with "
                                                    "JobRequeue=0 without --requeue")) +
                    ")";
        return d;
    }
    if (!in.requeue_asked && !o.requeue_explicit) {
        d.action = RequeueAction::NotAllowed;
        d.message = "gputopo: " + what + " is retryable, but the job did not ask for a requeue (" +
                    (in.asked_sources.empty() ? std::string("submit with sbatch --requeue, or give gputopo-launch "
                                                            "--requeue yes")
                                              : in.asked_sources) +
                    "; Slurm's JobRequeue=1 default alone does not count)";
        return d;
    }
    if (in.restart_count >= o.max_restarts) {
        d.action = RequeueAction::BudgetExhausted;
        d.message = "gputopo: " + what + "; restart budget exhausted (" + std::to_string(in.restart_count) + " of " +
                    std::to_string(o.max_restarts) + " restarts used, --max-restarts " + std::to_string(o.max_restarts) +
                    "); not requeueing, the job ends here";
        return d;
    }
    d.action = RequeueAction::Requeue;
    d.restart_count = in.restart_count;
    if (c.local && !in.node.empty()) d.exclude_node = in.node;
    if (o.backoff_s > 0) d.backoff_s = o.backoff_s * std::pow(2.0, std::min(in.restart_count, 20));
    std::ostringstream m;
    m << "gputopo: " << what << "; requeueing (restart " << (in.restart_count + 1) << " of " << o.max_restarts << ")";
    if (!d.exclude_node.empty()) m << ", keeping node " << d.exclude_node << " out of the next attempt";
    if (d.backoff_s > 0) m << ", back-off " << d.backoff_s << " s";
    d.message = m.str();
    return d;
}

RequeueResult perform_requeue(const std::string& job_id, const RequeueDecision& d) {
    RequeueResult res;
    if (d.restart_count >= 0 && requeued_since(query_job(job_id), d.restart_count)) {
        res.lost_race = true;  // Slurm requeued it (and may have started it again): not twice
        return res;
    }
    if (!d.exclude_node.empty() || d.backoff_s > 0) {
        JobInfo info = query_job(job_id);
        if (!info.known) {
            // Without the job's record the comment is unknown: writing one
            // would replace the user's text (issue 20, H9).
            res.message = "gputopo: could not read job " + job_id +
                          "'s record (squeue gave no single job line); the node to exclude is not recorded";
        } else {
            std::string comment = merge_exclusion_record(info.comment, d.exclude_node, d.backoff_s);
            CommandResult u = run_command({"scontrol", "update", "JobId=" + job_id, "Comment=" + comment}, 15);
            if (u.status != 0)
                res.message = "gputopo: could not record the node to exclude in the job's Comment (" + u.output + ")";
        }
    }
    // Large sites raise MessageTimeout (30-60 s); a controller that slow still
    // requeues, so the launcher waits as long as such a controller may take.
    CommandResult r = run_command({"scontrol", "requeue", job_id}, 60);
    if (r.status == 0) {
        res.requeued = true;
        return res;
    }
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (out.find("pending") != std::string::npos || out.find("completing") != std::string::npos ||
        out.find("Requested operation is presently disabled") != std::string::npos) {
        res.lost_race = true;
        return res;
    }
    // No answer (scontrol timed out or was killed): the request may still have
    // reached slurmctld. Whether the job was requeued is then read from Slurm.
    if (out.empty()) {
        JobInfo after = query_job(job_id);
        if (after.known && (after.state.find("REQUEUE") != std::string::npos || after.state == "PENDING")) {
            res.requeued = true;
            return res;
        }
    }
    res.message = "gputopo: scontrol requeue " + job_id + " failed: " + out;
    return res;
}

}  // namespace gputopo::launch
