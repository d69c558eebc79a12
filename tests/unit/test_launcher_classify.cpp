#include <catch2/catch.hpp>

#include <cmath>

#include <csignal>

#include "launcher/failure/classify.hpp"

using namespace gputopo::launch;

namespace {
ChildEnd exited(int code, const std::string& tail = "") {
    ChildEnd e;
    e.exited = true;
    e.exit_code = code;
    e.stderr_tail = tail;
    return e;
}
ClassifyPolicy policy() {
    ClassifyPolicy p;
    p.no_requeue_exit = {2, 64};
    p.no_requeue_code = 78;
    return p;
}
}  // namespace

TEST_CASE("classify: success and user errors", "[launcher]") {
    CHECK(classify(exited(0), policy()).cls == FailureClass::Success);
    CHECK(classify(exited(2, "NVRM: Xid (PCI:0000:3b:00): 79"), policy()).cls == FailureClass::UserError);
    auto c = classify(exited(78), policy());
    CHECK(c.cls == FailureClass::UserError);
    CHECK_THAT(c.evidence, Catch::Contains("78") && Catch::Contains("reserved"));
    CHECK(classify(exited(64), policy()).cls == FailureClass::UserError);
    CHECK(classify(exited(1, "Traceback (most recent call last):\nValueError: bad\n"), policy()).cls == FailureClass::Failed);
}

TEST_CASE("classify: GPU faults from the stderr tail", "[launcher]") {
    std::string xid = "step 100 loss 2.1\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n";
    auto c = classify(exited(1, xid), policy());
    CHECK(c.cls == FailureClass::GpuFault);
    CHECK(c.local);
    CHECK_THAT(c.evidence, Catch::Contains("Xid (PCI:0000:3b:00): 79") && Catch::Contains("exit code 1"));
    auto ecc = classify(exited(1, "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"), policy());
    CHECK(ecc.cls == FailureClass::GpuFault);
    CHECK(ecc.local);
    auto nccl = classify(exited(1, "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds\n"), policy());
    CHECK(nccl.cls == FailureClass::PeerLost);  // a peer's fault until a root cause says otherwise
    CHECK_FALSE(nccl.local);
    ChildEnd killed;
    killed.exited = false;
    killed.term_signal = SIGABRT;
    killed.stderr_tail = "terminate called after throwing an instance of 'c10::Error'\n  what():  CUDA error: unspecified launch failure\n";
    auto k = classify(killed, policy());
    CHECK(k.cls == FailureClass::GpuFault);
    CHECK_THAT(k.evidence, Catch::Contains("SIGABRT"));
}

TEST_CASE("classify: CUDA errors a program causes itself are not GPU faults", "[launcher]") {
    CHECK(classify(exited(1, "RuntimeError: CUDA error: out of memory\n"), policy()).cls == FailureClass::Failed);
    CHECK(classify(exited(1, "RuntimeError: CUDA error: device-side assert triggered\n"), policy()).cls == FailureClass::Failed);
    CHECK(classify(exited(1, "Xidle timer fired\nXid-like words in text: NoXid\n"), policy()).cls == FailureClass::Failed);
}

TEST_CASE("classify: node faults, preflight, timeout, preemption", "[launcher]") {
    auto n = classify(exited(1, "NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12\n"), policy());
    CHECK(n.cls == FailureClass::NodeFault);
    CHECK_FALSE(n.local);
    // A peer's loss is not this rank's own cause (launcher/failure/root_cause.hpp).
    CHECK(classify(exited(1, "socket: Connection reset by peer\n"), policy()).cls == FailureClass::PeerLost);
    CHECK(classify(exited(1, "RuntimeError: [/usr/src/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4711\n"),
                   policy()).cls == FailureClass::PeerLost);
    ChildEnd pf;
    pf.preflight_failed = true;
    pf.preflight_output = "gputopo doctor: GPU 3 missing";
    auto p = classify(pf, policy());
    CHECK(p.cls == FailureClass::GpuFault);
    CHECK(p.local);
    CHECK_THAT(p.evidence, Catch::Contains("preflight") && Catch::Contains("GPU 3 missing"));
    ChildEnd t = exited(143);
    t.got_term = true;
    t.term_time_left_s = 3;
    CHECK(classify(t, policy()).cls == FailureClass::Timeout);
    t.term_time_left_s = 3600;
    CHECK(classify(t, policy()).cls == FailureClass::Preemption);
    t.term_time_left_s = std::nan("");  // end time unknown
    CHECK(classify(t, policy()).cls == FailureClass::Preemption);
    // slurmctld enforces time limits on a 30 s tick: the SIGTERM often comes
    // after the end time (seen: 27 s after it on the local cluster).
    t.term_time_left_s = -27;
    CHECK(classify(t, policy()).cls == FailureClass::Timeout);
}

TEST_CASE("classify: exit status is the program's, 128+signal when killed", "[launcher]") {
    CHECK(exit_status_of(exited(3)) == 3);
    ChildEnd k;
    k.exited = false;
    k.term_signal = SIGKILL;
    CHECK(exit_status_of(k) == 128 + SIGKILL);
}
