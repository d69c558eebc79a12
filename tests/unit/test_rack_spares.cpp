// gputopo run --spares auto (run/rack_spares.hpp): spares inside every
// NVL72 rack, 2 of 18 trays, and a failed tray replaced from its own rack.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "run/job_options.hpp"
#include "run/node_pool.hpp"
#include "run/rack_spares.hpp"
#include "tests/unit/nvl72_fixture.hpp"
#include "topo/fabric/island_sources.hpp"

using namespace gputopo;
using namespace gputopo::launch;
using namespace gputopo::launch::job;
using gputopo_test::nvl72_hosts;
using gputopo_test::nvl72_racks;

namespace {

std::map<size_t, int> per_island(const std::vector<std::string>& nodes, const IslandMap& m) {
    std::map<size_t, int> c;
    for (const auto& n : nodes) ++c[m.find(n)];
    return c;
}

}  // namespace

TEST_CASE("spares auto: 2 of every NVL72 rack's 18 trays, 16 slots per rack", "[job][rack_spares]") {
    IslandMap m = nvl72_racks();
    CHECK(island_spares(18) == 2);
    CHECK(island_spares(9) == 1);
    CHECK(island_spares(8) == 0);
    NodePool pool = split_allocation(nvl72_hosts(1, 72), kSparesAuto, m);
    CHECK(pool.spares.size() == 8);  // 8 of 72 trays: 32 of 288 GPUs
    CHECK(pool.slots.size() == 64);
    for (const auto& [island, n] : per_island(pool.spares, m)) CHECK(n == 2);
    for (const auto& [island, n] : per_island(pool.slots, m)) CHECK(n == 16);
    // Half the trays of each rack (9): one spare per rack.
    NodePool half = split_allocation(nvl72_hosts(1, 36), kSparesAuto, m);
    CHECK(half.spares.size() == 4);
    CHECK(per_island(half.spares, m).size() == 4);
    // Too few trays per rack for the rule: an error naming the option.
    CHECK_THROWS_WITH(split_allocation(nvl72_hosts(1, 32), kSparesAuto, m), Catch::Contains("--spares auto") &&
                                                                          Catch::Contains("expected --spares N"));
}

TEST_CASE("spares auto: a failed tray is replaced from its own rack while the rack has a spare", "[job][rack_spares]") {
    IslandMap m = nvl72_racks();
    NodePool pool = split_allocation(nvl72_hosts(1, 72), kSparesAuto, m);
    const size_t rack = m.find(pool.slots[0]);
    std::vector<std::string> in_rack;
    for (const auto& s : pool.slots)
        if (m.find(s) == rack) in_rack.push_back(s);
    Classification gpu;
    gpu.cls = FailureClass::GpuFault;
    RestartPolicy policy;
    policy.max_restarts = 100;
    for (int i = 0; i < 3; ++i) {
        RestartDecision d = decide_restart(pool, gpu, in_rack[static_cast<size_t>(i)], i, policy, m);
        REQUIRE(d.action == RestartAction::Replace);
        // The rack's 2 spares first (the slot stays in the NVLink domain), then the nearest rack's.
        CHECK(d.same_island == (i < 2));
        CHECK((m.find(d.replacement) == rack) == (i < 2));
        CHECK_THAT(d.reason, Catch::Contains(i < 2 ? "same island" : "nearest island"));
        apply_decision(pool, d);
    }
    CHECK(pool.spares.size() == 5);
}

TEST_CASE("spares auto: the option", "[job][rack_spares]") {
    CHECK(parse_job_options({"--spares", "auto", "--", "x"}).spares == kSparesAuto);
    CHECK(parse_job_options({"--spares=3", "--", "x"}).spares == 3);
    CHECK_THROWS_WITH(parse_job_options({"--spares", "some", "--", "x"}), Catch::Contains("--spares 'some'") &&
                                                                                Catch::Contains(", or auto"));
}
