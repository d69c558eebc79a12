// gputopo run's checkpoint replica peers (run/replica_peers.hpp):
// every slot's replica in another failure domain, NVRx-compatible pairs, the
// fallback inside one domain, power domains, a spare inheriting its slot's peer.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "run/node_pool.hpp"
#include "run/replica_peers.hpp"
#include "topo/core/errors.hpp"
#include "tests/unit/nvl72_fixture.hpp"
#include "topo/fabric/island_sources.hpp"

using namespace gputopo;
using namespace gputopo::launch;
using namespace gputopo::launch::job;
using gputopo_test::nvl72_hosts;
using gputopo_test::nvl72_racks;

namespace {

IslandMap conf(const std::string& text) {
    IslandMap m;
    parse_island_conf(text, "gputopo.conf", m, nullptr);
    m.seal();
    return m;
}

ReplicaPeers plan(const std::vector<std::string>& slots, const IslandMap& m) {
    return plan_replica_peers(slots, [&](const std::string& n) { return failure_domain(m, n); });
}

// Every slot's peer is another slot, the relation is consistent (keeps is its inverse).
void check_consistent(const ReplicaPeers& p) {
    for (size_t i = 0; i < p.peer.size(); ++i) {
        CHECK(p.peer[i] != i);
        CHECK(p.keeps[p.peer[i]] == i);
    }
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("replica peers: NVL72 racks, every replica in another rack, NVRx pairs", "[job][replicas]") {
    IslandMap m = nvl72_racks();
    // 72 trays, 8 spares (2 per rack): 64 slots, 16 per rack, rack by rack.
    NodePool pool = split_allocation(nvl72_hosts(1, 72), 8, m);
    REQUIRE(pool.slots.size() == 64);
    ReplicaPeers p = plan(pool.slots, m);
    CHECK(p.rule == ReplicaRule::Pairs);
    CHECK(p.jump == 16);  // one rack's slots: NVRx replication_jump = the blast radius
    CHECK(nvrx_replication_jump(p, 4) == 64);
    CHECK(p.same_domain == 0);
    CHECK_FALSE(p.one_domain);
    check_consistent(p);
    for (size_t i = 0; i < 64; ++i) {
        CHECK(m.find(pool.slots[i]) != m.find(pool.slots[p.peer[i]]));
        // NVRx's cliques for replication_factor 2: n and n+J, n = a*2J + b.
        const size_t j = 16, n = (i / (2 * j)) * 2 * j + i % j;
        CHECK((p.peer[i] == n || p.peer[i] == n + j));
        CHECK((i == n || i == n + j));
    }
}

TEST_CASE("replica peers: uneven islands get a ring across them", "[job][replicas]") {
    // 3 islands of 2, 2 and 1 slots: 5 slots, no pairing; a ring by 2 crosses every island.
    IslandMap m = conf("Island=a Nodes=n[1-2]\nIsland=b Nodes=n[3-4]\nIsland=c Nodes=n5\n");
    ReplicaPeers p = plan({"n1", "n2", "n3", "n4", "n5"}, m);
    CHECK(p.rule == ReplicaRule::Ring);
    CHECK(p.same_domain == 0);
    CHECK(nvrx_replication_jump(p, 4) == 0);
    check_consistent(p);
    for (size_t i = 0; i < 5; ++i) CHECK(failure_domain(m, "n" + std::to_string(i + 1)) !=
                                         failure_domain(m, "n" + std::to_string(p.peer[i] + 1)));
}

TEST_CASE("replica peers: one island has no other domain; the rule says so and uses another node", "[job][replicas]") {
    IslandMap m = conf("Island=rack1 Nodes=n[1-4]\n");
    ReplicaPeers p = plan({"n1", "n2", "n3", "n4"}, m);
    CHECK(p.one_domain);
    CHECK(p.rule == ReplicaRule::Pairs);
    CHECK(p.jump == 1);
    CHECK(p.same_domain == 4);
    CHECK_THAT(p.note, Catch::Contains("one failure domain (rack1)") && Catch::Contains("another node"));
    check_consistent(p);
    // A domain holding more than half the slots: the fewest replicas inside it.
    IslandMap big = conf("Island=a Nodes=n[1-3]\nIsland=b Nodes=n4\n");
    ReplicaPeers q = plan({"n1", "n2", "n3", "n4"}, big);
    CHECK(q.same_domain == 2);
    CHECK_THAT(q.note, Catch::Contains("2 of 4 replicas in their own failure domain"));
    // One node: no peer.
    ReplicaPeers one = plan({"n1"}, m);
    CHECK(one.rule == ReplicaRule::None);
    CHECK(one.peer[0] == 0);
    // No island known: every node is its own domain.
    ReplicaPeers none = plan({"x1", "x2"}, IslandMap());
    CHECK(none.same_domain == 0);
    CHECK_FALSE(none.one_domain);
}

TEST_CASE("replica peers: islands of one power domain count as one", "[job][replicas]") {
    // r1 and r2 share pdu1, r3 and r4 pdu2: a replica in r2 for r1 would die with the PDU.
    IslandMap m = conf("Island=r1 Nodes=n[1-2] PowerDomain=pdu1\nIsland=r2 Nodes=n[3-4] PowerDomain=pdu1\n"
                       "Island=r3 Nodes=n[5-6] PowerDomain=pdu2\nIsland=r4 Nodes=n[7-8] PowerDomain=pdu2\n");
    const std::vector<std::string> slots = {"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"};
    ReplicaPeers p = plan(slots, m);
    CHECK(p.rule == ReplicaRule::Pairs);
    CHECK(p.jump == 4);  // by island alone it would be 2 (r1 with r2)
    CHECK(p.same_domain == 0);
    for (size_t i = 0; i < 8; ++i) CHECK(failure_domain(m, slots[i]) != failure_domain(m, slots[p.peer[i]]));
    CHECK(plan(slots, conf("Island=r1 Nodes=n[1-2]\nIsland=r2 Nodes=n[3-4]\nIsland=r3 Nodes=n[5-6]\nIsland=r4 Nodes=n[7-8]\n")).jump == 2);
    // A bad or a second power domain for one island is an error naming the line.
    CHECK_THROWS_WITH(conf("Island=r1 Nodes=n1 PowerDomain=p/1\n"), Catch::Contains("bad power domain name 'p/1'"));
    CHECK_THROWS_WITH(conf("Island=r1 Nodes=n1 PowerDomain=a\nIsland=r1 Nodes=n2 PowerDomain=b\n"),
                      Catch::Contains("already in power domain 'a'"));
    CHECK_THROWS_WITH(conf("Island=r1 Nodes=n1 Power=a\n"), Catch::Contains("did you mean PowerDomain?"));
}

TEST_CASE("replica peers: a spare inherits its slot's peer and restores from it until the next checkpoint", "[job][replicas]") {
    // tree: leaf1 = n[1-2], leaf2 = n[3-4]; slots n1, n3; spares n2, n4 (the cluster test's layout).
    IslandMap m = conf("Island=leaf1 Nodes=n[1-2]\nIsland=leaf2 Nodes=n[3-4]\n");
    NodePool pool = split_allocation({"n1", "n2", "n3", "n4"}, 2, m);
    REQUIRE(pool.slots == std::vector<std::string>{"n1", "n3"});
    ReplicaPeerSet set(pool, m, 2);
    char tmpl[] = "/tmp/gputopo-replicas.XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string dir = tmpl;
    EventLog log;
    auto vars = set.launch(pool, dir, 0, "", log);
    CHECK(vars == std::vector<std::pair<std::string, std::string>>{{"GPUTOPO_REPLICAS", dir + "/replicas.0"},
                                                                   {"GPUTOPO_REPLICATION_JUMP", "2"},
                                                                   {"GPUTOPO_REPLICATION_FACTOR", "2"}});
    CHECK(slurp(dir + "/replicas.0") ==
          "rule=pairs replication_jump=2 replication_factor=2 tasks_per_node=2 slots=2 attempt=0 same_domain=0\n"
          "slot=0 node=n1 domain=leaf1 peer=n3 peer_domain=leaf2 keeps=n3 replaced=- restore_from=-\n"
          "slot=1 node=n3 domain=leaf2 peer=n1 peer_domain=leaf1 keeps=n1 replaced=- restore_from=-\n");
    // n1 fails: n2 takes slot 0, keeps n3 as its peer and is told its predecessor's replica is on n3.
    Classification node_fault;
    node_fault.cls = FailureClass::NodeFault;
    RestartDecision d = decide_restart(pool, node_fault, "n1", 0, RestartPolicy{}, m);
    REQUIRE(d.action == RestartAction::Replace);
    apply_decision(pool, d);
    set.applied(d, pool, "/shared/step-20.pt");
    set.launch(pool, dir, 1, "/shared/step-20.pt", log);
    CHECK(slurp(dir + "/replicas.1") ==
          "rule=pairs replication_jump=2 replication_factor=2 tasks_per_node=2 slots=2 attempt=1 same_domain=0\n"
          "slot=0 node=n2 domain=leaf1 peer=n3 peer_domain=leaf2 keeps=n3 replaced=n1 restore_from=n3\n"
          "slot=1 node=n3 domain=leaf2 peer=n2 peer_domain=leaf1 keeps=n2 replaced=- restore_from=-\n");
    // The same attempt again without a new checkpoint: still to restore; after one, not.
    CHECK(set.rows(pool)[0].restore_from == "n3");
    set.launch(pool, dir, 2, "/shared/step-30.pt", log);
    CHECK(set.rows(pool)[0].replaced.empty());
    // A table that cannot be written: the step still runs, without GPUTOPO_REPLICAS.
    auto unwritten = set.launch(pool, dir + "/no/such/dir", 3, "/shared/step-30.pt", log);
    CHECK(unwritten == std::vector<std::pair<std::string, std::string>>{{"GPUTOPO_REPLICATION_JUMP", "2"},
                                                                        {"GPUTOPO_REPLICATION_FACTOR", "2"}});
    // n2 and then n3 replaced with no checkpoint between: n4 (slot 1) has no replica left for slot 0's node.
    NodePool p2 = split_allocation({"n1", "n2", "n3", "n4", "n5"}, 3, conf("Island=a Nodes=n[1-2]\nIsland=b Nodes=n[3-5]\n"));
    IslandMap m2 = conf("Island=a Nodes=n[1-2]\nIsland=b Nodes=n[3-5]\n");
    ReplicaPeerSet s2(p2, m2, 1);
    REQUIRE(p2.slots.size() == 2);
    const std::string a = p2.slots[0], b = p2.slots[1];
    RestartDecision d1 = decide_restart(p2, node_fault, a, 0, RestartPolicy{}, m2);
    apply_decision(p2, d1);
    s2.applied(d1, p2, "c1");
    RestartDecision d2 = decide_restart(p2, node_fault, b, 1, RestartPolicy{}, m2);
    apply_decision(p2, d2);
    s2.applied(d2, p2, "c1");
    auto rows = s2.rows(p2);
    CHECK(rows[0].replaced == a);
    CHECK(rows[0].restore_from.empty());  // lost with b
    CHECK(rows[1].replaced == b);
    CHECK(rows[1].restore_from.empty());  // its replica was on a's slot, replaced since
    CHECK(std::system(("rm -rf " + dir).c_str()) == 0);
}
