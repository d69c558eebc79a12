// gputopo run's pure parts (run/): the node pool, island-aware
// replacement, the restart decisions, srun's blame lines, heartbeats, the
// waste model with the restart time, the options.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "run/job_options.hpp"
#include "run/node_pool.hpp"
#include "run/spare_check.hpp"
#include "run/step_end.hpp"
#include "tests/unit/nvl72_fixture.hpp"
#include "topo/fabric/island_sources.hpp"

using namespace gputopo;
using namespace gputopo::launch;
using namespace gputopo::launch::job;
using gputopo_test::nvl72_hosts;
using gputopo_test::nvl72_racks;

namespace {

Classification of(FailureClass c) {
    Classification x;
    x.cls = c;
    x.evidence = "test";
    return x;
}

}  // namespace

TEST_CASE("gputopo run: spares one per island, the slots island by island", "[job]") {
    IslandMap m = nvl72_racks();
    const auto nodes = nvl72_hosts(1, 12);  // 3 nodes in each of the 4 racks
    NodePool p = split_allocation(nodes, 4, m);
    REQUIRE(p.spares.size() == 4);
    REQUIRE(p.slots.size() == 8);
    std::set<size_t> spare_islands;
    for (const auto& s : p.spares) spare_islands.insert(m.find(s));
    CHECK(spare_islands.size() == 4);  // every rack holds one
    // Slots island by island (the racks in the order the allocation first names them),
    // each rack's nodes in the allocation's order: ranks in slot order are island-ordered.
    std::vector<std::string> expect;
    for (size_t island : {m.find(nodes[0]), m.find(nodes[1]), m.find(nodes[2]), m.find(nodes[3])})
        for (const auto& n : nodes)
            if (m.find(n) == island && std::find(p.spares.begin(), p.spares.end(), n) == p.spares.end()) expect.push_back(n);
    CHECK(p.slots == expect);
    CHECK(m.find(p.slots[0]) == m.find(p.slots[1]));
    CHECK_THROWS_WITH(split_allocation(nodes, 12, m), Catch::Contains("--spares 12"));
}

TEST_CASE("gputopo run: the replacement comes from the failed node's island", "[job]") {
    IslandMap m = nvl72_racks();
    NodePool p = split_allocation(nvl72_hosts(1, 12), 4, m);
    for (const auto& failed : p.slots) {
        int r = pick_replacement(p, failed, m);
        REQUIRE(r >= 0);
        CHECK(m.find(p.spares[size_t(r)]) == m.find(failed));
    }
    // With the failed node's rack out of spares, the nearest rack by island order.
    const std::string failed = p.slots[0];
    const size_t fi = m.find(failed);
    NodePool q = p;
    q.spares.erase(std::remove_if(q.spares.begin(), q.spares.end(), [&](const std::string& s) { return m.find(s) == fi; }),
                   q.spares.end());
    int r = pick_replacement(q, failed, m);
    REQUIRE(r >= 0);
    size_t best = SIZE_MAX;
    for (const auto& s : q.spares) best = std::min(best, size_t(std::llabs(long(m.find(s)) - long(fi))));
    CHECK(size_t(std::llabs(long(m.find(q.spares[size_t(r)])) - long(fi))) == best);
}

TEST_CASE("gputopo run: a replacement takes the failed node's slot, the others keep theirs", "[job]") {
    IslandMap m = nvl72_racks();
    NodePool p = split_allocation(nvl72_hosts(1, 8), 4, m);
    const NodePool before = p;
    const std::string failed = p.slots[2];
    RestartDecision d = decide_restart(p, of(FailureClass::Failed), failed, 0, RestartPolicy{3, 0}, m);
    REQUIRE(d.action == RestartAction::Replace);
    CHECK(d.same_island);
    apply_decision(p, d);
    for (size_t i = 0; i < p.slots.size(); ++i) CHECK(p.slots[i] == (i == 2 ? d.replacement : before.slots[i]));
    CHECK(p.excluded == std::vector<std::string>{failed});
    CHECK(p.spares.size() == before.spares.size() - 1);
    CHECK(task_nodelist({"a", "b"}, 2) == "a,a,b,b");
}

TEST_CASE("gputopo run: no spare left shrinks down to --min-nodes, then requeues", "[job]") {
    IslandMap m;
    NodePool p;
    p.slots = {"n1", "n2", "n3"};
    RestartDecision d = decide_restart(p, of(FailureClass::NodeFault), "n2", 0, RestartPolicy{5, 2}, m);
    CHECK(d.action == RestartAction::Shrink);
    apply_decision(p, d);
    CHECK(p.slots == std::vector<std::string>{"n1", "n3"});
    d = decide_restart(p, of(FailureClass::NodeFault), "n3", 1, RestartPolicy{5, 2}, m);
    CHECK(d.action == RestartAction::Requeue);
    CHECK(d.failed_node == "n3");
    d = decide_restart(p, of(FailureClass::NodeFault), "n3", 1, RestartPolicy{5, 0}, m);
    CHECK(d.action == RestartAction::Requeue);  // no --min-nodes: never shrink
}

TEST_CASE("gputopo run: a user error, a limit or a spent budget stops; an unknown node relaunches", "[job]") {
    IslandMap m;
    NodePool p;
    p.slots = {"n1"};
    p.spares = {"n2"};
    for (FailureClass c : {FailureClass::UserError, FailureClass::Timeout, FailureClass::Preemption, FailureClass::Success})
        CHECK(decide_restart(p, of(c), "n1", 0, RestartPolicy{3, 0}, m).action == RestartAction::Stop);
    CHECK(decide_restart(p, of(FailureClass::Failed), "n1", 3, RestartPolicy{3, 0}, m).action == RestartAction::Stop);
    CHECK(decide_restart(p, of(FailureClass::Failed), "", 0, RestartPolicy{3, 0}, m).action == RestartAction::Relaunch);
    CHECK(decide_restart(p, of(FailureClass::GpuFault), "n1", 0, RestartPolicy{3, 0}, m).action == RestartAction::Replace);
}

TEST_CASE("gputopo run: heartbeat paths", "[job]") {
    CHECK(heartbeat_path("/s/hb.%r", 12) == "/s/hb.12");
    CHECK(heartbeat_path("/s/hb", 3) == "/s/hb.3");
    CHECK(heartbeat_path(attempt_pattern("/s/hb.%a.%r", 2), 7) == "/s/hb.2.7");
}

TEST_CASE("gputopo run: the waste model takes the measured restart time", "[job]") {
    const double c = 10, m = 3 * 3600.0;
    RestartWaste fast = daly_with_restart(c, m, 5), slow = daly_with_restart(c, m, 600);
    CHECK(fast.interval_s == Approx(std::sqrt(2 * c * (m + 5)) * (1 + std::sqrt(c / (2 * (m + 5))) / 3 + c / (18 * (m + 5))) - c));
    CHECK(slow.waste > fast.waste);
    CHECK(slow.waste - fast.waste == Approx((600 - 5) / m).margin(0.01));
}

TEST_CASE("gputopo run: an asynchronous checkpoint stalls little but is durable later", "[job]") {
    const double m = 30 * 60.0, r = 8;
    RestartWaste blocking = daly_with_restart(10, m, r), async = daly_with_restart(0.16, m, r, 10);
    // A constant lag does not move Daly's optimum for the stall.
    CHECK(async.interval_s == Approx(daly_with_restart(0.16, m, r).interval_s));
    CHECK(async.waste == Approx(0.16 / async.interval_s + ((async.interval_s + 0.16) / 2 + 10 + r) / m));
    CHECK(async.waste < blocking.waste / 3);
    // The next checkpoint waits for the previous write: interval + stall >= the write's lag.
    RestartWaste slow_write = daly_with_restart(0.01, m, r, 120);
    CHECK(slow_write.interval_s == Approx(120 - 0.01));
    CHECK(daly_with_restart(10, m, r, 0).waste == Approx(blocking.waste));
}

TEST_CASE("gputopo run: options", "[job]") {
    JobOptions o = parse_job_options({"--spares", "2", "--max-restarts=20", "--hang-timeout", "2m", "--", "python", "t.py"});
    CHECK(o.spares == 2);
    CHECK(o.max_restarts == 20);
    CHECK(o.hang_timeout_s == 120);
    CHECK(o.command == std::vector<std::string>{"python", "t.py"});
    CHECK_THROWS_WITH(parse_job_options({"--spares", "x", "--", "p"}), Catch::Contains("--spares 'x'"));
    CHECK_THROWS_WITH(parse_job_options({"--spare", "1", "--", "p"}), Catch::Contains("unknown option '--spare'"));
    CHECK_THROWS_WITH(parse_job_options({"--spares", "1"}), Catch::Contains("no program"));
}

TEST_CASE("gputopo run: spare check options, a spare's Slurm state, the check's srun", "[job]") {
    JobOptions o = parse_job_options({"--spare-check", "gputopo doctor", "--spare-check-timeout=2m", "--start-timeout", "5", "--", "p"});
    CHECK(o.spare_check == "gputopo doctor");
    CHECK(o.spare_check_timeout_s == 120);
    CHECK(o.start_timeout_s == 5);
    JobOptions d = parse_job_options({"p"});
    CHECK(d.spare_check.empty());
    CHECK(d.spare_check_timeout_s == 60);
    CHECK(d.start_timeout_s == 60);
    CHECK_THROWS_WITH(parse_job_options({"--spare-check", "", "--", "p"}), Catch::Contains("--spare-check: expected a command"));
    CHECK_THROWS_WITH(parse_job_options({"--start-timeout", "0", "--", "p"}), Catch::Contains("--start-timeout '0'"));

    CHECK(unusable_state("NodeName=n2 Arch=x86_64 CoresPerSocket=56 State=IDLE ThreadsPerCore=2").empty());
    CHECK(unusable_state("NodeName=n2 State=MIXED Partitions=debug").empty());
    CHECK(unusable_state("NodeName=n4 State=MIXED+DRAIN Partitions=debug") == "State=MIXED+DRAIN");
    CHECK(unusable_state("NodeName=n4 State=DOWN+NOT_RESPONDING Reason=x") == "State=DOWN+NOT_RESPONDING");
    CHECK(unusable_state("NodeName=n4 State=IDLE+POWERED_DOWN\n") == "State=IDLE+POWERED_DOWN");
    CHECK(unusable_state("NodeName=n4 State=ALLOCATED+FAIL") == "State=ALLOCATED+FAIL");
    CHECK(unusable_state("Node n9 not found").empty());  // unknown: the command check decides

    CHECK(spare_check_argv("n2", "gputopo doctor") ==
          std::vector<std::string>{"srun", "--nodelist=n2", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--job-name=gputopo-spare-check",
                                   "--kill-on-bad-exit=1", "/bin/sh", "-c", "gputopo doctor"});
}

// check_spares with stand-ins for srun (runs the command with SLURMD_NODENAME set),
// scontrol (one call for all; n9 drained, c not named) and squeue (no steps) first on PATH.
TEST_CASE("gputopo run: spares are checked at once, each bounded, a drained one not run", "[job]") {
    char tmpl[] = "/tmp/gputopo-spare-check.XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string dir = tmpl;
    auto script = [&](const std::string& name, const std::string& body) {
        std::ofstream(dir + "/" + name) << "#!/bin/sh\n" << body;
        ::chmod((dir + "/" + name).c_str(), 0755);
    };
    script("srun", "for a; do case $a in --nodelist=*) export SLURMD_NODENAME=${a#--nodelist=};; esac; done\n"
                   "while [ \"$1\" != /bin/sh ]; do shift; done\nexec \"$@\"\n");
    script("scontrol", "[ \"$*\" = 'show node -o a,b,c,n9' ] || exit 1\n"
                       "printf 'NodeName=a State=IDLE\\nNodeName=b State=MIXED\\nNodeName=n9 Arch=x State=IDLE+DRAIN T=1\\n'\n");
    script("squeue", "exit 0\n");
    const std::string path = std::getenv("PATH");
    ::setenv("PATH", (dir + ":" + path).c_str(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    auto v = check_spares({"a", "b", "c", "n9"},
                          "case $SLURMD_NODENAME in a) exit 0;; b) exec sleep 30;; *) echo \"$SLURMD_NODENAME is bad\" >&2; exit 3;; esac",
                          1, "1");
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ::setenv("PATH", path.c_str(), 1);
    int rm = std::system(("rm -rf " + dir).c_str());
    CHECK(rm == 0);
    REQUIRE(v.size() == 4);
    CHECK(v[0].ok);
    CHECK_FALSE(v[1].ok);
    CHECK_THAT(v[1].reason, Catch::Contains("did not end within --spare-check-timeout 1 s"));
    CHECK_FALSE(v[2].ok);
    CHECK(v[2].reason == "--spare-check ended with exit status 3: c is bad");
    CHECK_FALSE(v[3].ok);
    CHECK(v[3].reason == "Slurm has it State=IDLE+DRAIN");
    CHECK(took < 3);  // one timeout, not one per spare
}
