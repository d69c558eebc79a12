#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>

#include "launcher/requeue.hpp"

using namespace gputopo::launch;

namespace {
Classification gpu(bool local) {
    Classification c;
    c.cls = FailureClass::GpuFault;
    c.local = local;
    c.evidence = "exit code 1; stderr: NVRM: Xid 79";
    return c;
}
RequeueInputs batch(int restarts) {
    RequeueInputs in;
    in.in_batch_job = true;
    in.requeue_allowed = true;
    in.restart_count = restarts;
    in.node = "n2";
    return in;
}
}  // namespace

TEST_CASE("requeue: retryable failure within the budget requeues and excludes a locally faulty node", "[launcher]") {
    Options o;
    o.max_restarts = 2;
    auto d = decide_requeue(gpu(true), o, batch(0));
    CHECK(d.action == RequeueAction::Requeue);
    CHECK(d.exclude_node == "n2");
    CHECK_THAT(d.message, Catch::Contains("restart 1 of 2") && Catch::Contains("n2"));
    auto remote = decide_requeue(gpu(false), o, batch(1));
    CHECK(remote.action == RequeueAction::Requeue);
    CHECK(remote.exclude_node.empty());
}

TEST_CASE("requeue: budget, permission and class", "[launcher]") {
    Options o;
    o.max_restarts = 2;
    auto d = decide_requeue(gpu(true), o, batch(2));
    CHECK(d.action == RequeueAction::BudgetExhausted);
    CHECK_THAT(d.message, Catch::Contains("budget exhausted") && Catch::Contains("2 of 2"));
    RequeueInputs no = batch(0);
    no.requeue_allowed = false;
    CHECK(decide_requeue(gpu(true), o, no).action == RequeueAction::NotAllowed);
    no = batch(0);
    no.in_batch_job = false;
    CHECK(decide_requeue(gpu(true), o, no).action == RequeueAction::NotAllowed);
    Options off = o;
    off.requeue = false;
    CHECK(decide_requeue(gpu(true), off, batch(0)).action == RequeueAction::NotAllowed);
    Classification user;
    user.cls = FailureClass::UserError;
    CHECK(decide_requeue(user, o, batch(0)).action == RequeueAction::None);
    Classification t;
    t.cls = FailureClass::Timeout;
    CHECK(decide_requeue(t, o, batch(0)).action == RequeueAction::None);
    Options tt = o;
    tt.requeue_on = {"timeout"};
    CHECK(decide_requeue(t, tt, batch(0)).action == RequeueAction::Requeue);
}

TEST_CASE("requeue: back-off doubles per restart", "[launcher]") {
    Options o;
    o.max_restarts = 5;
    o.backoff_s = 30;
    CHECK(decide_requeue(gpu(true), o, batch(0)).backoff_s == Approx(30));
    CHECK(decide_requeue(gpu(true), o, batch(2)).backoff_s == Approx(120));
    o.backoff_s = 0;
    CHECK(decide_requeue(gpu(true), o, batch(2)).backoff_s == 0);
}

TEST_CASE("requeue: exclusion record in the job comment", "[launcher]") {
    CHECK(merge_exclusion_record("", "n2", 0) == "gputopo:exclude=n2");
    std::string c = merge_exclusion_record("my run 7", "n2", 60);
    CHECK(c == "my run 7 gputopo:exclude=n2;backoff=60");
    std::string c2 = merge_exclusion_record(c, "n5", 120);
    CHECK(c2 == "my run 7 gputopo:exclude=n2,n5;backoff=120");
    CHECK(merge_exclusion_record(c2, "n2", 0) == "my run 7 gputopo:exclude=n2,n5");
    ExclusionRecord r = parse_exclusion_record(c2);
    CHECK(r.nodes == std::vector<std::string>{"n2", "n5"});
    CHECK(r.backoff_s == Approx(120));
    CHECK(parse_exclusion_record("nothing here").nodes.empty());
}

TEST_CASE("requeue: one leader per key", "[launcher]") {
    std::string dir = "/tmp";
    std::string key = "test" + std::to_string(::getpid());
    CHECK(claim_leadership(dir, key));
    CHECK_FALSE(claim_leadership(dir, key));
    CHECK(claim_leadership(dir, key + "b"));
    std::remove((dir + "/gputopo-launch." + key + ".leader").c_str());
    std::remove((dir + "/gputopo-launch." + key + "b.leader").c_str());
}
