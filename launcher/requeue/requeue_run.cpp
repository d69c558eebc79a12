#include "launcher/requeue/requeue_run.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "launcher/requeue/expedite.hpp"
#include "launcher/requeue/requeue.hpp"
#include "launcher/requeue/requeue_asked.hpp"
#include "launcher/requeue/slurm_ctl.hpp"
#include "launcher/state/node_state.hpp"

namespace gputopo::launch {

namespace {

void say(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

std::optional<std::string> real_getenv(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
}

}  // namespace

void requeue_if_due(const Options& opt, const RankInfo& ri, const Classification& c, int status, EventLog& log) {
    const std::string& job_id = ri.job_id;
    // One leader per failure: only it asks slurmctld, decides and speaks
    // (10,000 ranks failing at once must not mean 10,000 RPCs).
    if (!job_id.empty()) {
        std::string key = (ri.cluster.empty() ? "" : ri.cluster + ".") + job_id + "." + std::to_string(ri.restart_count);
        std::string local_dir = node_private_dir(opt.node_state_dir, ri.node, ri.tmpdir);
        bool leader = claim_leadership(local_dir, key) && (opt.state_dir.empty() || claim_leadership(opt.state_dir, key));
        if (!leader) {
            log.write(Event("requeue_decision").add("action", "left_to_leader").add("message", "another rank handles this failure"));
            return;
        }
    }
    JobInfo info = job_id.empty() ? JobInfo{} : query_job(job_id);
    RequeueInputs rq;
    rq.in_batch_job = info.known && info.batch;
    rq.requeue_allowed = info.requeue_allowed;
    if (rq.in_batch_job && rq.requeue_allowed && !opt.requeue_explicit && retryable(c.cls, opt) && opt.requeue) {
        const RequeueAsked asked = requeue_asked(job_id, info, real_getenv);
        rq.requeue_asked = asked.asked;
        if (!asked.asked) rq.asked_sources = asked.explain();
        else log.write(Event("requeue_asked").add("by", asked.by));
    }
    rq.restart_count = ri.restart_count;
    rq.node = ri.node;
    RequeueDecision d = decide_requeue(c, opt, rq);
    if (d.action != RequeueAction::Requeue) {
        say(d.message);
        log.write(Event("requeue_decision").add("action", requeue_action_name(d.action)).add("message", d.message));
        if (d.action == RequeueAction::BudgetExhausted) log.write(Event("final").add("message", d.message).add("exit_status", status));
        if (d.action == RequeueAction::BudgetExhausted) settle_final_end(job_id, ri.restart_count, "the restart budget spent", log);
        return;
    }
    RequeueResult rr = perform_requeue(job_id, d);
    if (!rr.message.empty()) say(rr.message);
    if (rr.requeued) {
        say(d.message);
        Event e("requeue_decision");
        e.add("action", "requeue").add("message", d.message).add("next_restart", ri.restart_count + 1)
            .add("max_restarts", opt.max_restarts);
        if (d.backoff_s > 0) e.add("backoff_s", d.backoff_s);
        log.write(e);
        if (!d.exclude_node.empty()) log.write(Event("excluded_node").add("excluded", d.exclude_node));
    } else if (rr.lost_race) {
        log.write(Event("requeue_decision").add("action", "left_to_leader").add("message", "the job was already requeued"));
    } else {
        log.write(Event("requeue_decision").add("action", "failed").add("message", rr.message));
    }
}

}  // namespace gputopo::launch
