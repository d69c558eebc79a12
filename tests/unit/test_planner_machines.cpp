// Hand-worked plans for four real machines. Every expected value below was
// derived by reading the fixture file itself (cpusets decoded by hand from
// the hex masks, PCI parents and port states read from the XML), not copied
// from the planner's output. The derivation is summarised above each case.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/topology_loader.hpp"

using gputopo::CpuSet;
using gputopo::Mode;
using gputopo::Node;
using gputopo::Plan;
using gputopo::PlanRequest;

namespace {

struct Expect {
    std::vector<int> gpus;
    std::string cpus;
    std::vector<int> mems;
    std::vector<std::string> nics;
    int island;
};

Plan plan(const Node& n, std::vector<int> gpus, int ntasks, Mode mode = Mode::Closest) {
    PlanRequest r;
    r.gpus = std::move(gpus);
    r.ntasks = ntasks;
    r.mode = mode;
    return gputopo::make_plan(n, r);
}

void check(const Plan& p, const std::vector<Expect>& want) {
    REQUIRE(p.tasks.size() == want.size());
    for (size_t t = 0; t < want.size(); ++t) {
        INFO("task " << t);
        CHECK(p.tasks[t].gpus == want[t].gpus);
        CHECK(p.tasks[t].cpus.to_list() == want[t].cpus);
        CHECK(p.tasks[t].mems == want[t].mems);
        CHECK(p.tasks[t].nics == want[t].nics);
        CHECK(p.tasks[t].island == want[t].island);
    }
}

Node load(const std::string& rel) { return gputopo::load_topology_file(gputopo_test::topology(rel)); }

}  // namespace

// Dell XE8640 (hwloc 2.12 XML), SNC4: 8 NUMA nodes, SMT2 (PU i and i+112).
// GPUs by bus id: 4e:00.0 (under NUMA 3's group, cpuset 0x000000ff,0xfc000000,,,0x00fffc00,0x0
// = 42-55,154-167), 5f:00.0 (NUMA 1: 14-27,126-139), cb:00.0 (NUMA 7: 98-111,210-223),
// db:00.0 (NUMA 5: 70-83,182-195). NVLinkBandwidth: every pair linked -> one island.
// IB ports: mlx5_0 (4d:00.0) Port1State 4 = ACTIVE; mlx5_1, mlx5_2, mlx5_3 Port1State 1
// = DOWN. So the only usable NIC is mlx5_0 and it is every GPU's nearest.
TEST_CASE("hand-worked plan: Dell XE8640 4x H100", "[planner]") {
    Node n = load("hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml");
    check(plan(n, {0, 1, 2, 3}, 4), {
                                        {{0}, "42-55,154-167", {3}, {"mlx5_0"}, 0},
                                        {{1}, "14-27,126-139", {1}, {"mlx5_0"}, 0},
                                        {{2}, "98-111,210-223", {7}, {"mlx5_0"}, 0},
                                        {{3}, "70-83,182-195", {5}, {"mlx5_0"}, 0},
                                    });
    CHECK(plan(n, {0, 1, 2, 3}, 4).node_nics == std::vector<std::string>{"mlx5_0"});
    // 8 tasks: two per GPU, each NUMA node's 14 cores split 7 + 7 (siblings kept).
    Plan p8 = plan(n, {0, 1, 2, 3}, 8);
    CHECK(p8.tasks[0].cpus.to_list() == "42-48,154-160");
    CHECK(p8.tasks[1].cpus.to_list() == "49-55,161-167");
    CHECK(p8.tasks[6].cpus.to_list() == "70-76,182-188");
    // One GPU on NUMA 1 only: the task gets that NUMA node.
    check(plan(n, {1}, 1), {{{1}, "14-27,126-139", {1}, {"mlx5_0"}, 0}});
}

// HPE Cray EX235a "Tioga" (hwloc 2 XML): 1 EPYC, 4 NUMA nodes, SMT2 (PU i and i+64);
// each GCD's PCI host bridge hangs below one L3 cache (8 cores):
//   c1:00.0 L3#6 48-55,112-119 (NUMA 3)   c6:00.0 L3#7 56-63,120-127 (NUMA 3, hsi0 c5:00.0 on its bridge)
//   c9:00.0 L3#2 16-23,80-87   (NUMA 1)   ce:00.0 L3#3 24-31,88-95   (NUMA 1, hsi1 cd:00.0)
//   d1:00.0 L3#0 0-7,64-71     (NUMA 0)   d6:00.0 L3#1 8-15,72-79    (NUMA 0, hsi2 d5:00.0)
//   d9:00.0 L3#4 32-39,96-103  (NUMA 2)   de:00.0 L3#5 40-47,104-111 (NUMA 2, hsi3 dd:00.0)
// XGMIHops: 1 between every pair -> one island. Each GCD's nearest Slingshot NIC is the
// one in its NUMA node (same host bridge or another host bridge of that NUMA node).
TEST_CASE("hand-worked plan: Tioga 4x MI250X (8 GCDs)", "[planner]") {
    Node n = load("hwloc/llnl-tioga_hpe-cray-ex235a_1xEPYC7A53_4xMI250X-8GCD_4xSlingshot_XGMI_hwloc2.xml");
    check(plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 8), {
                                                    {{0}, "48-55,112-119", {3}, {"hsi0"}, 0},
                                                    {{1}, "56-63,120-127", {3}, {"hsi0"}, 0},
                                                    {{2}, "16-23,80-87", {1}, {"hsi1"}, 0},
                                                    {{3}, "24-31,88-95", {1}, {"hsi1"}, 0},
                                                    {{4}, "0-7,64-71", {0}, {"hsi2"}, 0},
                                                    {{5}, "8-15,72-79", {0}, {"hsi2"}, 0},
                                                    {{6}, "32-39,96-103", {2}, {"hsi3"}, 0},
                                                    {{7}, "40-47,104-111", {2}, {"hsi3"}, 0},
                                                });
    // 4 tasks x 2 GCDs: every pair is XGMI1, so the PCIe tie-break pairs the two
    // GCDs of one NUMA node (NODE rather than SYS); a task then owns both L3s.
    check(plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 4), {
                                                    {{0, 1}, "48-63,112-127", {3}, {"hsi0"}, 0},
                                                    {{2, 3}, "16-31,80-95", {1}, {"hsi1"}, 0},
                                                    {{4, 5}, "0-15,64-79", {0}, {"hsi2"}, 0},
                                                    {{6, 7}, "32-47,96-111", {2}, {"hsi3"}, 0},
                                                });
    CHECK(plan(n, {0, 1}, 2).node_nics == std::vector<std::string>{"hsi0", "hsi1", "hsi2", "hsi3"});
}

// OCI BM.GPU.H100.8 (NCCL dump): NUMA 0 affinity 00000000,000000ff,ffffffff,ffff0000,
// 00000000,00ffffff,ffffffff = 0-55,112-167; NUMA 1 = 56-111,168-223. No cores in an
// NCCL file: each PU is a unit. GPUs 0f,2d,44,5b on NUMA 0; 89,a8,c0,d8 on NUMA 1; all
// through NVSwitches -> one island. Each GPU's PCIe switch also holds one dual-port CX7
// (two RDMA devices on one bus id): 0c mlx5_0/1, 2a mlx5_3/4, 41 mlx5_5/6, 58 mlx5_7/8,
// 86 mlx5_9/10, a5 mlx5_12/13, bd mlx5_14/15, d5 mlx5_16/17.
TEST_CASE("hand-worked plan: OCI BM.GPU.H100.8", "[planner]") {
    Node n = load("nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml");
    // 8 x 1: four tasks per NUMA node share its 56 cores (CPU i and i+112 are one core's
    // threads, the x86 enumeration the file matches), 14 whole cores each, in core order.
    // Before SMT pairing, tasks 0 and 2 got 0-27 and 112-139: the two threads of cores 0-27.
    check(plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 8), {
                                                    {{0}, "0-13,112-125", {0}, {"mlx5_0"}, 0},
                                                    {{1}, "14-27,126-139", {0}, {"mlx5_3"}, 0},
                                                    {{2}, "28-41,140-153", {0}, {"mlx5_5"}, 0},
                                                    {{3}, "42-55,154-167", {0}, {"mlx5_7"}, 0},
                                                    {{4}, "56-69,168-181", {1}, {"mlx5_9"}, 0},
                                                    {{5}, "70-83,182-195", {1}, {"mlx5_12"}, 0},
                                                    {{6}, "84-97,196-209", {1}, {"mlx5_14"}, 0},
                                                    {{7}, "98-111,210-223", {1}, {"mlx5_16"}, 0},
                                                });
    // 16 tasks: two per GPU, one per port of its card.
    Plan p16 = plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 16);
    CHECK(p16.tasks[0].nics == std::vector<std::string>{"mlx5_0"});
    CHECK(p16.tasks[1].nics == std::vector<std::string>{"mlx5_1"});
    CHECK(p16.tasks[8].nics == std::vector<std::string>{"mlx5_9"});
    CHECK(p16.tasks[9].nics == std::vector<std::string>{"mlx5_10"});
    // 2 x 4: NV18 everywhere; the PCIe tie-break keeps each socket's four together.
    check(plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 2),
          {
              {{0, 1, 2, 3}, "0-55,112-167", {0}, {"mlx5_0", "mlx5_3", "mlx5_5", "mlx5_7"}, 0},
              {{4, 5, 6, 7}, "56-111,168-223", {1}, {"mlx5_9", "mlx5_12", "mlx5_14", "mlx5_16"}, 0},
          });
    CHECK(p16.node_nics == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6",
                                                    "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_10", "mlx5_12", "mlx5_13",
                                                    "mlx5_14", "mlx5_15", "mlx5_16", "mlx5_17"});
}

// IBM AC922 "Lassen" (hwloc 2 XML), SMT4. Allowed cpusets: NUMA 0 = 0x00ffffff,0xffffffff,
// 0xffffff00 = 8-87 (20 cores), NUMA 8 = 96-175 (20 cores). GPUs 0004:04:00.0 and
// 0004:05:00.0 below one PLX switch (PIX) on NUMA 0, 0035:03:00.0 and 0035:04:00.0 on
// NUMA 8. No NVLink matrix in the file, so islands come from the PCIe switches: {0,1}, {2,3}.
// Dual-port CX-5: mlx5_0/mlx5_1 (0003:01:00.0/.1, NUMA 0), mlx5_2/mlx5_3 (0033:01:00.0/.1,
// NUMA 8), all Port1State 4 = ACTIVE; both ports are equally near (NODE) to a socket's GPUs.
TEST_CASE("hand-worked plan: Lassen AC922 4x V100", "[planner]") {
    Node n = load("hwloc/llnl-lassen_ibm-ac922_2xPOWER9_4xV100-SXM2_2xCX5-dualport_hwloc2.xml");
    check(plan(n, {0, 1, 2, 3}, 4), {
                                        {{0}, "8-47", {0}, {"mlx5_0"}, 0},
                                        {{1}, "48-87", {0}, {"mlx5_1"}, 0},
                                        {{2}, "96-135", {8}, {"mlx5_2"}, 1},
                                        {{3}, "136-175", {8}, {"mlx5_3"}, 1},
                                    });
    check(plan(n, {0, 1, 2, 3}, 2), {
                                        {{0, 1}, "8-87", {0}, {"mlx5_0", "mlx5_1"}, 0},
                                        {{2, 3}, "96-175", {8}, {"mlx5_2", "mlx5_3"}, 1},
                                    });
    // Island mode with GPUs 1 and 2 only: one task per island, in island order.
    check(plan(n, {2, 1}, 2, Mode::Island), {
                                                {{1}, "8-87", {0}, {"mlx5_0"}, 0},
                                                {{2}, "96-175", {8}, {"mlx5_2"}, 1},
                                            });
    // A step limited to 3 cores of socket 0 (8-19): GPUs 0 and 1 share them 2 + 1.
    PlanRequest r;
    r.gpus = {0, 1};
    r.ntasks = 2;
    r.allowed_cpus = CpuSet::parse_list("8-19");
    Plan p = gputopo::make_plan(n, r);
    CHECK(p.tasks[0].cpus.to_list() == "8-15");
    CHECK(p.tasks[1].cpus.to_list() == "16-19");
}
