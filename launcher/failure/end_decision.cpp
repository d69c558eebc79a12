#include "launcher/failure/end_decision.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "launcher/child/hooks.hpp"
#include "launcher/failure/root_cause.hpp"
#include "launcher/requeue/expedite.hpp"
#include "launcher/requeue/slurm_ctl.hpp"
#include "launcher/state/node_state.hpp"

namespace gputopo::launch {

namespace {

void say(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

// The per-node election key for `what` in this attempt.
std::string attempt_key(const RankInfo& ri, const char* what) {
    // The node's name too: a directory several nodes share must not elect one for all.
    return std::string(what) + "." + (ri.cluster.empty() ? "" : ri.cluster + ".") + ri.job_id + "." +
           ri.step_id + "." + std::to_string(ri.restart_count) + "." + ri.node;
}

// The claims first_on_node() won, removed when the decision is made (the
// object goes): a rank of the node that comes later finds the cause already
// recorded or re-reads it, both harmless. The requeue claim is not one of them
// (a late rank must not requeue the next attempt); stale ones are swept.
class NodeClaims {
public:
    NodeClaims(const Options& opt, const RankInfo& ri) : opt_(opt), ri_(ri) {}
    NodeClaims(const NodeClaims&) = delete;
    NodeClaims& operator=(const NodeClaims&) = delete;
    ~NodeClaims() {
        for (const auto& [dir, key] : claims_) release_claim(dir, key);
    }
    bool first_on_node(const char* what) {
        std::string dir = node_private_dir(opt_.node_state_dir, ri_.node, ri_.tmpdir);
        const std::string key = attempt_key(ri_, what);
        if (!claim_leadership(dir, key)) return false;
        claims_.emplace_back(dir, key);
        return true;
    }

private:
    const Options& opt_;
    const RankInfo& ri_;
    std::vector<std::pair<std::string, std::string>> claims_;
};

// SIGTERM because the step is torn down after another rank's failure (srun
// ends the step, or the job was requeued) is not a preemption: the recorded
// root cause of this attempt, when there is one (asked by the node's first
// such rank only: a real preemption of many ranks stays one query per node).
std::optional<CauseRecord> teardown_cause(const RankInfo& ri, NodeClaims& claims) {
    if (ri.job_id.empty() || ri.world < 2 || !claims.first_on_node("term")) return std::nullopt;
    JobInfo info = query_job(ri.job_id);
    if (!info.known) return std::nullopt;
    return find_cause(info.comment, cause_key(ri.step_id, ri.restart_count));
}

// Phase 6: how the program ended; logs it and says so.
Classification classify_end(const Options& opt, const RankInfo& ri, const SuperviseResult& sr, EventLog& log,
                            NodeClaims& claims, bool& teardown_deferred) {
    ClassifyPolicy pol;
    pol.no_requeue_exit = opt.no_requeue_exit;
    pol.no_requeue_code = opt.no_requeue_code;
    pol.timeout_window_s = 60;
    Classification c = classify(sr.end, pol);
    if (c.cls == FailureClass::Preemption) {
        if (auto r = teardown_cause(ri, claims)) {
            c.cls = FailureClass::PeerLost;
            c.evidence = "SIGTERM from the step's teardown after " + r->cls + " on " + r->node + " (not a preemption)";
            teardown_deferred = true;
        }
    }
    Event e(c.cls == FailureClass::Success ? "end" : "failure");
    e.add("class", failure_class_name(c.cls)).add("evidence", c.evidence).add("local", c.local)
        .add("exit_status", exit_status_of(sr.end)).add("hooks_run", sr.hooks_run).add("hooks_late", sr.hooks_late);
    log.write(e);
    if (c.cls == FailureClass::Success) return c;
    // A time limit or a cancel ends every rank: one line per node is enough.
    bool ending = c.cls == FailureClass::Timeout || c.cls == FailureClass::Preemption;
    if (!ending || speaks(opt, ri))
        say("gputopo: rank " + std::to_string(ri.rank) + " on " + ri.node + ": " + failure_class_name(c.cls) + ": " +
            c.evidence);
    return c;
}

// Phase 6b (launcher/failure/root_cause.hpp): a rank with a cause of its own records
// it in the job's Comment (the first such rank of its node).
void record_root_cause(const RankInfo& ri, const Classification& c, EventLog& log, NodeClaims& claims) {
    if (ri.job_id.empty() || ri.world < 2 || !is_root_cause(c.cls)) return;
    if (!claims.first_on_node("cause")) return;
    const std::string key = cause_key(ri.step_id, ri.restart_count);
    JobInfo info = query_job(ri.job_id);
    if (!info.known || find_cause(info.comment, key)) return;
    std::string comment = merge_cause(info.comment, {failure_class_name(c.cls), ri.node, key});
    CommandResult u = run_command({"scontrol", "update", "JobId=" + ri.job_id, "Comment=" + comment}, 15);
    log.write(Event("root_cause").add("class", failure_class_name(c.cls)).add("recorded", u.status == 0));
}

// Phase 6c: a peer_lost rank defers to the root cause recorded within
// --peer-wait; none: node_fault. Returns nullopt when this rank leaves the
// decision to another (the cause's own rank, or its node's first peer_lost rank).
std::optional<Classification> resolve_peer_loss(const Options& opt, const RankInfo& ri, const Classification& c,
                                                EventLog& log, NodeClaims& claims) {
    if (ri.job_id.empty()) {
        Classification n = c;
        n.cls = FailureClass::NodeFault;
        return n;
    }
    if (!claims.first_on_node("peer")) {
        log.write(Event("requeue_decision").add("action", "left_to_leader").add("message", "another rank of this node waits for the root cause"));
        return std::nullopt;
    }
    const std::string key = cause_key(ri.step_id, ri.restart_count);
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        JobInfo info = query_job(ri.job_id);
        if (auto r = info.known ? find_cause(info.comment, key) : std::nullopt) {
            std::string m = "gputopo: rank " + std::to_string(ri.rank) + " on " + ri.node + " lost a peer (" +
                            c.evidence + "); the root cause decides: " + r->cls + " on " + r->node;
            say(m);  // once per node: the node's first peer_lost rank
            log.write(Event("requeue_decision").add("action", "deferred").add("root_cause", r->cls)
                          .add("root_cause_node", r->node).add("message", m));
            return std::nullopt;
        }
        if (!info.known || (info.state != "RUNNING" && info.state != "COMPLETING" && !info.state.empty())) break;
        double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (waited >= opt.peer_wait_s) break;
        usleep(static_cast<useconds_t>(std::min(1.0, opt.peer_wait_s - waited) * 1e6));
    }
    Classification n = c;
    n.cls = FailureClass::NodeFault;
    n.local = false;
    n.evidence = "a peer was lost and no rank recorded a cause within " + format_duration(opt.peer_wait_s) +
                 " (a node or its launcher died): " + c.evidence;
    say("gputopo: rank " + std::to_string(ri.rank) + " on " + ri.node + ": node_fault: " + n.evidence);
    log.write(Event("failure").add("class", "node_fault").add("evidence", n.evidence).add("local", false));
    return n;
}

}  // namespace

std::optional<Classification> decide_end(const Options& opt, const RankInfo& ri, const SuperviseResult& sr,
                                         EventLog& log) {
    NodeClaims claims(opt, ri);  // released when the decision is made
    bool teardown_deferred = false;  // this SIGTERM follows a recorded root cause
    Classification c = classify_end(opt, ri, sr, log, claims, teardown_deferred);
    record_root_cause(ri, c, log, claims);
    if (c.cls == FailureClass::PeerLost && teardown_deferred) return std::nullopt;  // the root cause's rank decides
    if (c.cls == FailureClass::PeerLost) return resolve_peer_loss(opt, ri, c, log, claims);
    // A user error is final: in a --requeue=expedite job Slurm must not requeue
    // or hold it (launcher/requeue/expedite.hpp; the node's first such rank asks).
    if (c.cls == FailureClass::UserError && claims.first_on_node("final"))
        settle_final_end(ri.job_id, ri.restart_count, "user_error", log);
    return c;
}

}  // namespace gputopo::launch
