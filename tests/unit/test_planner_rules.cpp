// Planner rules 1-6 on small synthetic nodes whose right answer is evident
// from their construction (tests/unit/model_builder.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/unit/model_builder.hpp"
#include "topo/core/errors.hpp"
#include "topo/plan/islands.hpp"
#include "topo/plan/planner.hpp"

using gputopo::CpuSet;
using gputopo::Mode;
using gputopo::Node;
using gputopo::Plan;
using gputopo::PlanRequest;
using gputopo_test::NodeBuilder;

namespace {

using Groups = std::vector<std::vector<int>>;

Plan plan(const Node& n, std::vector<int> gpus, int ntasks, Mode mode = Mode::Closest, int per_task = 0) {
    PlanRequest r;
    r.gpus = std::move(gpus);
    r.ntasks = ntasks;
    r.mode = mode;
    r.gpus_per_task = per_task;
    return gputopo::make_plan(n, r);
}

Groups gpus_of(const Plan& p) {
    Groups g;
    for (const auto& t : p.tasks) g.push_back(t.gpus);
    return g;
}

std::vector<std::string> first_nics(const Plan& p) {
    std::vector<std::string> v;
    for (const auto& t : p.tasks) v.push_back(t.nics.empty() ? "" : t.nics.front());
    return v;
}

// 2 packages x 1 NUMA node x 4 cores (SMT2: core c = PUs c, c+8). Per socket
// one host bridge with two PCIe switches, each with 2 GPUs and 1 NIC.
// GPUs 0-3 and NICs mlx5_0/1 on NUMA 0; GPUs 4-7 and mlx5_2/3 on NUMA 1.
Node two_socket_pcie(bool nics = true) {
    NodeBuilder b(2);
    b.numa(0, 0, 4).numa(1, 1, 4);
    unsigned bus = 0x10;
    int nic_no = 0;
    for (int s = 0; s < 2; ++s) {
        int hb = b.host_bridge(s);
        for (int w = 0; w < 2; ++w) {
            int sw = b.bridge(hb);
            b.gpu(sw, bus);
            b.gpu(sw, bus + 1);
            bus += 2;
            if (nics) b.nic(sw, bus++, "mlx5_" + std::to_string(nic_no++));
        }
    }
    return b.build();
}

// Four GPUs on one PCIe switch, links given by the test.
NodeBuilder four_on_one_switch() {
    NodeBuilder b(1);
    b.numa(0, 0, 8);
    int sw = b.bridge(b.host_bridge(0));
    for (unsigned bus = 0x10; bus < 0x14; ++bus) b.gpu(sw, bus);
    return b;
}

bool whole_cores(const Node& n, const CpuSet& cpus) {
    for (const auto& c : n.cores)
        if (c.pus.intersects(cpus) && !cpus.contains(c.pus)) return false;
    return true;
}

}  // namespace

TEST_CASE("mode names parse and print", "[planner]") {
    CHECK(gputopo::parse_mode("none") == Mode::None);
    CHECK(gputopo::parse_mode("closest") == Mode::Closest);
    CHECK(gputopo::parse_mode("island") == Mode::Island);
    CHECK(std::string(gputopo::mode_name(Mode::Island)) == "island");
    try {
        gputopo::parse_mode("nearest");
        FAIL("accepted");
    } catch (const gputopo::ParseError& e) {
        CHECK(std::string(e.what()).find("'nearest'") != std::string::npos);
        CHECK(std::string(e.what()).find("none, closest or island") != std::string::npos);
    }
}

TEST_CASE("impossible requests are PlanErrors naming the input", "[planner]") {
    Node n = two_socket_pcie();
    auto message = [&](std::vector<int> gpus, int ntasks, int per_task) {
        try {
            plan(n, gpus, ntasks, Mode::Closest, per_task);
        } catch (const gputopo::PlanError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message({0, 8}, 2, 0).find("GPU 8 is not on the node") != std::string::npos);
    CHECK(message({0, -1}, 2, 0).find("GPU -1") != std::string::npos);
    CHECK(message({1, 2, 1}, 1, 0).find("GPU 1 is listed twice") != std::string::npos);
    CHECK(message({0, 1}, 0, 0).find("at least 1 (got 0)") != std::string::npos);
    CHECK(message({0, 1}, 1, -2).find("got -2") != std::string::npos);
    CHECK(message({0, 1}, 2, 0) == "no error");
}

TEST_CASE("rule 2: pairs on one PCIe switch before the host bridge or the other socket", "[planner]") {
    Node n = two_socket_pcie();
    CHECK(gpus_of(plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 4)) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
    // Allocation order does not matter in closest mode.
    CHECK(gpus_of(plan(n, {7, 2, 5, 0, 3, 6, 1, 4}, 4)) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
    // {0,2,4,6}: no switch pairs left; same socket (PHB) beats SYS.
    CHECK(gpus_of(plan(n, {0, 2, 4, 6}, 2)) == Groups{{0, 2}, {4, 6}});
    // {0,1,2,4}: {0,1} PIX + {2,4} SYS has worst SYS; {0,2}+{1,4} too; best
    // worst is SYS either way, then the sum: PIX+SYS < PHB+SYS.
    CHECK(gpus_of(plan(n, {0, 1, 2, 4}, 2)) == Groups{{0, 1}, {2, 4}});
    // Groups of 4: one per socket.
    CHECK(gpus_of(plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 2)) == Groups{{0, 1, 2, 3}, {4, 5, 6, 7}});
}

TEST_CASE("rule 2: NVLink before PCIe, more links before fewer", "[planner]") {
    NodeBuilder b = four_on_one_switch();
    b.link(0, 2, 1).link(1, 3, 1);
    Node n = b.build();
    CHECK(gpus_of(plan(n, {0, 1, 2, 3}, 2)) == Groups{{0, 2}, {1, 3}});

    NodeBuilder c = four_on_one_switch();
    c.link(0, 1, 2).link(2, 3, 2).link(0, 2, 4).link(1, 3, 4);
    CHECK(gpus_of(plan(c.build(), {0, 1, 2, 3}, 2)) == Groups{{0, 2}, {1, 3}});
}

TEST_CASE("rule 2: the grouping is optimal where greedy pairing is not", "[planner]") {
    // 0-1 NV4 (the closest pair), 0-2 and 1-3 NV2, 2-3 only PCIe across sockets.
    // Greedy takes {0,1} and is left with {2,3} (SYS); the optimum is {0,2},{1,3}.
    NodeBuilder b(1);
    b.numa(0, 0, 2).numa(1, 1, 2);
    int h0 = b.host_bridge(0), h1 = b.host_bridge(1);
    b.gpu(h0, 0x10).gpu(h0, 0x11).gpu(h0, 0x12).gpu(h1, 0x90);
    b.link(0, 1, 4).link(0, 2, 2).link(1, 3, 2);
    Node n = b.build();
    CHECK(gpus_of(plan(n, {0, 1, 2, 3}, 2)) == Groups{{0, 2}, {1, 3}});
}

TEST_CASE("rule 2: six GPUs in pairs minimise the worst pair, then the sum", "[planner]") {
    // A ring 0-1-2-3-4-5-0 of NV1 plus a chord 0-3 NV8. The ring pairings
    // {0,1}{2,3}{4,5} and {1,2}{3,4}{5,0} have worst NV1; so has {0,3}{1,2}{4,5},
    // whose sum is smaller (NV8 ranks closer than NV1).
    NodeBuilder b(1);
    b.numa(0, 0, 6);
    int hb = b.host_bridge(0);
    for (unsigned bus = 0x10; bus < 0x16; ++bus) b.gpu(b.bridge(hb), bus);
    for (int i = 0; i < 6; ++i) b.link(i, (i + 1) % 6, 1);
    b.link(0, 3, 8);
    Node n = b.build();
    Groups g = gpus_of(plan(n, {0, 1, 2, 3, 4, 5}, 3));
    CHECK(g == Groups{{0, 3}, {1, 2}, {4, 5}});
    // Without the chord, the three-pair options tie: the lowest canonical one wins.
    NodeBuilder c(1);
    c.numa(0, 0, 6);
    int hc = c.host_bridge(0);
    for (unsigned bus = 0x10; bus < 0x16; ++bus) c.gpu(c.bridge(hc), bus);
    for (int i = 0; i < 6; ++i) c.link(i, (i + 1) % 6, 1);
    CHECK(gpus_of(plan(c.build(), {0, 1, 2, 3, 4, 5}, 3)) == Groups{{0, 1}, {2, 3}, {4, 5}});
}

TEST_CASE("rule 1: every GPU used once; uneven and over-subscribed requests are sensible", "[planner]") {
    Node n = two_socket_pcie();
    // 8 GPUs, 3 tasks: 3+3+2, all used once.
    Plan p = plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 3);
    std::vector<int> all;
    for (const auto& t : p.tasks) all.insert(all.end(), t.gpus.begin(), t.gpus.end());
    std::sort(all.begin(), all.end());
    CHECK(all == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    std::vector<size_t> sizes;
    for (const auto& t : p.tasks) sizes.push_back(t.gpus.size());
    std::sort(sizes.begin(), sizes.end());
    CHECK(sizes == std::vector<size_t>{2, 3, 3});
    CHECK_FALSE(p.notes.empty());

    // 2 GPUs, 4 tasks: neighbouring tasks share a GPU.
    Plan q = plan(n, {4, 0}, 4);
    CHECK(gpus_of(q) == Groups{{0}, {0}, {4}, {4}});
    CHECK(q.tasks[0].cpus != q.tasks[1].cpus);
    CHECK_FALSE(q.tasks[0].cpus.intersects(q.tasks[1].cpus));
    CHECK_FALSE(q.notes.empty());

    // Explicit 1 GPU per task with 4 allocated and 2 tasks: 2 GPUs unused.
    Plan r = plan(n, {0, 1, 4, 5}, 2, Mode::Closest, 1);
    CHECK(gpus_of(r) == Groups{{0}, {1}});
    // Explicit 2 GPUs per task, 3 tasks, 4 GPUs: two groups, shared by neighbours.
    Plan s = plan(n, {0, 1, 4, 5}, 3, Mode::Closest, 2);
    CHECK(gpus_of(s) == Groups{{0, 1}, {0, 1}, {4, 5}});
    // More GPUs per task than allocated: cut to the allocation.
    CHECK(gpus_of(plan(n, {2, 3}, 1, Mode::Closest, 4)) == Groups{{2, 3}});
}

TEST_CASE("rule 3: CPUs local to the GPUs, disjoint, balanced, whole cores, mems", "[planner]") {
    Node n = two_socket_pcie();
    // Tasks 0,1 share NUMA 0 (cores 0-3); task 2 alone on NUMA 1 (cores 4-7).
    Plan p = plan(n, {0, 1, 4}, 3);
    REQUIRE(p.tasks.size() == 3);
    CHECK(p.tasks[0].cpus.to_list() == "0-1,8-9");
    CHECK(p.tasks[1].cpus.to_list() == "2-3,10-11");
    CHECK(p.tasks[2].cpus.to_list() == "4-7,12-15");
    CHECK(p.tasks[0].mems == std::vector<int>{0});
    CHECK(p.tasks[2].mems == std::vector<int>{1});
    // 3 tasks on one NUMA node of 4 cores: 2+1+1 contiguous.
    Plan q = plan(n, {0, 1, 2}, 3);
    CHECK(q.tasks[0].cpus.to_list() == "0-1,8-9");
    CHECK(q.tasks[1].cpus.to_list() == "2,10");
    CHECK(q.tasks[2].cpus.to_list() == "3,11");
    for (const auto& t : q.tasks) CHECK(whole_cores(n, t.cpus));
}

TEST_CASE("rule 3: the step's allowed CPUs are respected; too few local CPUs spill nearby", "[planner]") {
    Node n = two_socket_pcie();
    PlanRequest r;
    r.gpus = {0, 1, 4};
    r.ntasks = 3;
    r.allowed_cpus = CpuSet::parse_list("0-3,8-11");  // only NUMA 0
    Plan p = gputopo::make_plan(n, r);
    CpuSet used;
    for (const auto& t : p.tasks) {
        CHECK(r.allowed_cpus->contains(t.cpus));
        CHECK_FALSE(t.cpus.empty());
        CHECK_FALSE(used.intersects(t.cpus));
        used |= t.cpus;
        CHECK(whole_cores(n, t.cpus));
    }
    // Tasks 0 and 1 stay on their GPUs' NUMA node and share 3 of its cores;
    // task 2 (GPU on NUMA 1, no allowed CPU there) gets the 4th.
    CHECK(p.tasks[0].cpus.count() + p.tasks[1].cpus.count() == 6);
    CHECK(p.tasks[2].cpus.count() == 2);
    CHECK(p.tasks[2].mems == std::vector<int>{0});
    CHECK_FALSE(p.notes.empty());

    // Allowed CPUs split across SMT siblings: only the allowed PU is used.
    r.gpus = {4};
    r.ntasks = 1;
    r.allowed_cpus = CpuSet::parse_list("4-5");
    Plan q = gputopo::make_plan(n, r);
    CHECK(q.tasks[0].cpus.to_list() == "4-5");
}

TEST_CASE("rule 3: tasks spilling into the same NUMA node get contiguous blocks", "[planner]") {
    // NUMA 0 (package 0) has no GPU; GPUs on NUMA 1 and 2 (package 1). The
    // step may use only NUMA 0: both tasks spill there, 3 cores each, in blocks.
    NodeBuilder b(1);
    b.numa(0, 0, 6).numa(1, 1, 2).numa(2, 1, 2);
    b.gpu(b.bridge(b.host_bridge(1)), 0x10).gpu(b.bridge(b.host_bridge(2)), 0x90);
    Node n = b.build();
    PlanRequest r;
    r.gpus = {0, 1};
    r.ntasks = 2;
    r.allowed_cpus = CpuSet::parse_list("0-5");
    Plan p = gputopo::make_plan(n, r);
    CHECK(p.tasks[0].cpus.to_list() == "0-2");
    CHECK(p.tasks[1].cpus.to_list() == "3-5");
    CHECK(p.tasks[0].mems == std::vector<int>{0});
}

TEST_CASE("rule 3: CPU-only steps, unknown cores, unknown locality, too few cores", "[planner]") {
    Node n = two_socket_pcie();
    Plan p = plan(n, {}, 4);
    REQUIRE(p.tasks.size() == 4);
    CHECK(p.tasks[0].cpus.to_list() == "0-1,8-9");
    CHECK(p.tasks[3].cpus.to_list() == "6-7,14-15");
    CHECK(p.tasks[3].mems == std::vector<int>{1});
    for (const auto& t : p.tasks) {
        CHECK(t.gpus.empty());
        CHECK(t.nics.empty());
        CHECK(t.island == -1);
    }

    // No cores known (NCCL XML): every PU is a unit.
    NodeBuilder b(2);
    b.no_cores().numa(0, 0, 2);
    int sw = b.bridge(b.host_bridge(0));
    b.gpu(sw, 0x10).gpu(sw, 0x11);
    Node nc = b.build();
    Plan q = plan(nc, {0, 1}, 2);
    CHECK(q.tasks[0].cpus.to_list() == "0-1");
    CHECK(q.tasks[1].cpus.to_list() == "2-3");

    // GPUs with no locality: the CPUs are spread evenly.
    NodeBuilder u(1);
    u.numa(0, 0, 3).numa(1, 1, 3);
    u.gpu_without_locality(0x10).gpu_without_locality(0x11);
    Node nu = u.build();
    Plan s = plan(nu, {0, 1}, 2);
    CHECK(s.tasks[0].cpus.to_list() == "0-2");
    CHECK(s.tasks[1].cpus.to_list() == "3-5");
    CHECK(s.tasks[1].mems == std::vector<int>{1});

    // Fewer cores than tasks: a hardware thread each (default), or with
    // whole_cores one core each, shared.
    PlanRequest r;
    r.gpus = {0, 1};
    r.ntasks = 2;
    r.allowed_cpus = CpuSet::parse_list("0,8");  // one core
    Plan t = gputopo::make_plan(n, r);
    CHECK(t.tasks[0].cpus.to_list() == "0");
    CHECK(t.tasks[1].cpus.to_list() == "8");
    r.whole_cores = true;
    Plan w = gputopo::make_plan(n, r);
    CHECK(w.tasks[0].cpus.to_list() == "0,8");
    CHECK(w.tasks[1].cpus.to_list() == "0,8");
}

TEST_CASE("rule 3: GPUs whose locality spans NUMA nodes share it in blocks", "[planner]") {
    // SNC-like: NUMA 0 and 1 on package 0; the GPUs' local CPUs cover both.
    NodeBuilder b(1);
    b.numa(0, 0, 2).numa(1, 0, 2).numa(2, 1, 2);
    int sw = b.bridge(b.host_bridge(0));
    b.gpu(sw, 0x10).gpu(sw, 0x11);
    Node n = b.build();
    n.gpus[0].local_cpus = n.gpus[1].local_cpus = CpuSet::parse_list("0-3");
    Plan p = plan(n, {0, 1}, 2);
    CHECK(p.tasks[0].cpus.to_list() == "0-1");
    CHECK(p.tasks[0].mems == std::vector<int>{0});
    CHECK(p.tasks[1].cpus.to_list() == "2-3");
    CHECK(p.tasks[1].mems == std::vector<int>{1});
    Plan one = plan(n, {1}, 1);
    CHECK(one.tasks[0].cpus.to_list() == "0-3");
    CHECK(one.tasks[0].mems == std::vector<int>{0, 1});
}

TEST_CASE("rule 4: nearest usable NIC, spread evenly, node-wide list", "[planner]") {
    Node n = two_socket_pcie();
    // One NIC per switch: each GPU's nearest is its switch's NIC (PIX).
    Plan p = plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 8);
    CHECK(first_nics(p) == std::vector<std::string>{"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1", "mlx5_2", "mlx5_2",
                                                    "mlx5_3", "mlx5_3"});
    CHECK(p.node_nics == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"});
    // A 2-GPU task on two switches lists both GPUs' NICs, its first GPU's first.
    Plan q = plan(n, {1, 2}, 1);
    CHECK(q.tasks[0].nics == std::vector<std::string>{"mlx5_0", "mlx5_1"});
    // node_nics does not depend on the allocation.
    CHECK(q.node_nics == p.node_nics);

    // Two GPUs sharing two NICs on their switch: one NIC each. A storage NIC
    // and a NIC whose only port is down are never used.
    NodeBuilder b(1);
    b.numa(0, 0, 2).numa(1, 1, 2);
    int h0 = b.host_bridge(0), h1 = b.host_bridge(1);
    int sw = b.bridge(h0);
    b.gpu(sw, 0x10).gpu(sw, 0x11).nic(sw, 0x12, "mlx5_0").nic(sw, 0x13, "mlx5_1").nic(sw, 0x14, "mlx5_2", true, true);
    int sw2 = b.bridge(h1);
    b.gpu(sw2, 0x90).nic(sw2, 0x91, "mlx5_3", true, false, "DOWN").nic(b.bridge(h1), 0x92, "mlx5_4");
    b.nic(sw2, 0x93, "eth0", false);
    Node m = b.build();
    Plan r = plan(m, {0, 1, 2}, 3);
    CHECK(first_nics(r) == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_4"});
    CHECK(r.node_nics == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_4"});
    // Four tasks sharing two GPUs over two NICs: balanced 2/2.
    Plan s = plan(m, {0, 1}, 4);
    auto f = first_nics(s);
    CHECK(std::count(f.begin(), f.end(), "mlx5_0") == 2);
    CHECK(std::count(f.begin(), f.end(), "mlx5_1") == 2);

    // A 2-GPU task whose second GPU has the nearer NIC lists that NIC first.
    NodeBuilder c(1);
    c.numa(0, 0, 2);
    int hc = c.host_bridge(0);
    int s1 = c.bridge(hc), s2 = c.bridge(hc);
    c.gpu(s1, 0x10).gpu(s2, 0x20).nic(s2, 0x21, "mlx5_0").nic(c.host_bridge(0), 0x30, "mlx5_1");
    Plan u = plan(c.build(), {0, 1}, 1);
    CHECK(u.tasks[0].nics == std::vector<std::string>{"mlx5_0"});

    // No NICs: no NIC, a note, still a plan.
    Plan t = plan(two_socket_pcie(false), {0, 1}, 2);
    CHECK(t.tasks[0].nics.empty());
    CHECK(t.node_nics.empty());
    CHECK_FALSE(t.notes.empty());
}

TEST_CASE("rule 5: islands and island-mode ordering", "[planner]") {
    // NVLink pairs {0,2} and {1,3}: islands 0 = {0,2}, 1 = {1,3}.
    NodeBuilder b = four_on_one_switch();
    b.link(0, 2, 4).link(1, 3, 4);
    Node n = b.build();
    CHECK(gputopo::gpu_islands(n) == std::vector<int>{0, 1, 0, 1});
    Plan closest = plan(n, {0, 1, 2, 3}, 4, Mode::Closest);
    CHECK(gpus_of(closest) == Groups{{0}, {1}, {2}, {3}});
    std::vector<int> isl;
    for (const auto& t : closest.tasks) isl.push_back(t.island);
    CHECK(isl == std::vector<int>{0, 1, 0, 1});
    Plan island = plan(n, {0, 1, 2, 3}, 4, Mode::Island);
    CHECK(gpus_of(island) == Groups{{0}, {2}, {1}, {3}});
    isl.clear();
    for (const auto& t : island.tasks) isl.push_back(t.island);
    CHECK(isl == std::vector<int>{0, 0, 1, 1});

    // Without links: islands by PCIe switch; one per switch here.
    CHECK(gputopo::gpu_islands(two_socket_pcie()) == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
    // Links join transitively; a link-less GPU stays alone when no switch is shared.
    NodeBuilder c(1);
    c.numa(0, 0, 2);
    int hb = c.host_bridge(0);
    c.gpu(c.bridge(hb), 0x10).gpu(c.bridge(hb), 0x11).gpu(c.bridge(hb), 0x12).gpu(c.bridge(hb), 0x13);
    c.link(0, 1, 1).link(1, 3, 1);
    CHECK(gputopo::gpu_islands(c.build()) == std::vector<int>{0, 0, 1, 0});
}

TEST_CASE("mode none: blocks of the allocation as given, nothing bound", "[planner]") {
    Node n = two_socket_pcie();
    Plan p = plan(n, {5, 0, 3, 6}, 2, Mode::None);
    CHECK(p.mode == Mode::None);
    CHECK(gpus_of(p) == Groups{{5, 0}, {3, 6}});
    for (const auto& t : p.tasks) {
        CHECK(t.cpus.empty());
        CHECK(t.mems.empty());
        CHECK(t.nics.empty());
        CHECK(t.island == -1);
    }
    CHECK(p.tasks[0].gpu_pci.at(0) == n.gpus[5].pci);
    CHECK(p.node_nics.size() == 4);
}

TEST_CASE("rule 6: the same inputs give the same plan", "[planner]") {
    Node n = two_socket_pcie();
    for (Mode m : {Mode::Closest, Mode::Island}) {
        Plan a = plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 4, m);
        Plan b = plan(n, {6, 7, 4, 5, 2, 3, 0, 1}, 4, m);
        Plan c = plan(n, {0, 1, 2, 3, 4, 5, 6, 7}, 4, m);
        for (const Plan* x : {&b, &c}) {
            REQUIRE(x->tasks.size() == a.tasks.size());
            for (size_t t = 0; t < a.tasks.size(); ++t) {
                CHECK(x->tasks[t].gpus == a.tasks[t].gpus);
                CHECK(x->tasks[t].cpus == a.tasks[t].cpus);
                CHECK(x->tasks[t].mems == a.tasks[t].mems);
                CHECK(x->tasks[t].nics == a.tasks[t].nics);
                CHECK(x->tasks[t].island == a.tasks[t].island);
            }
            CHECK(x->node_nics == a.node_nics);
        }
    }
}

TEST_CASE("above the exact limit the heuristic still finds evident optima", "[planner]") {
    // 24 GPUs: 3 sockets x 2 switches x 4 GPUs, NVLink pairs (i, i+2) within a
    // switch. Pairs: the NVLink pairs. Quads: one switch each.
    NodeBuilder b(1);
    b.numa(0, 0, 4).numa(1, 1, 4).numa(2, 2, 4);
    unsigned bus = 0x10;
    for (int s = 0; s < 3; ++s) {
        int hb = b.host_bridge(s);
        for (int w = 0; w < 2; ++w) {
            int sw = b.bridge(hb);
            for (int g = 0; g < 4; ++g) b.gpu(sw, bus++);
        }
    }
    for (int base = 0; base < 24; base += 4) b.link(base, base + 2, 2).link(base + 1, base + 3, 2);
    Node n = b.build();
    std::vector<int> all;
    for (int i = 0; i < 24; ++i) all.push_back(i);
    Groups pairs = gpus_of(plan(n, all, 12));
    Groups want_pairs;
    for (int base = 0; base < 24; base += 4) {
        want_pairs.push_back({base, base + 2});
        want_pairs.push_back({base + 1, base + 3});
    }
    std::sort(want_pairs.begin(), want_pairs.end());
    CHECK(pairs == want_pairs);
    Groups quads = gpus_of(plan(n, all, 6));
    for (size_t q = 0; q < quads.size(); ++q) CHECK(quads[q] == std::vector<int>{int(4 * q), int(4 * q + 1), int(4 * q + 2), int(4 * q + 3)});
}

TEST_CASE("rule 3, -c N: a task never gets fewer CPUs than it asked while the step has them", "[planner][cpus_per_task]") {
    // 3 packages, one NUMA node each: NUMA 0 and 1 one core each, NUMA 2 four
    // cores (SMT2: core c = PUs c, c+6). GPU 0 on NUMA 0, GPU 1 on NUMA 1.
    NodeBuilder b(2);
    b.numa(0, 0, 1).numa(1, 1, 1).numa(2, 2, 4);
    b.gpu(b.bridge(b.host_bridge(0)), 0x10).gpu(b.bridge(b.host_bridge(1)), 0x90);
    Node n = b.build();
    PlanRequest r;
    r.gpus = {0};
    r.ntasks = 1;
    // The case: -n1 -c2 --gpus=1, the GPU's NUMA node one core of 2 PUs
    // (here: -c 3 and -c 4). The GPU's own core first, whole cores next.
    r.cpus_per_task = 2;
    CHECK(gputopo::make_plan(n, r).tasks[0].cpus.to_list() == "0,6");
    r.cpus_per_task = 4;
    Plan p = gputopo::make_plan(n, r);
    CHECK(p.tasks[0].cpus.count() == 4);
    CHECK(p.tasks[0].cpus.contains(CpuSet::parse_list("0,6")));
    CHECK(whole_cores(n, p.tasks[0].cpus));
    CHECK(p.tasks[0].mems.size() == 2);
    CHECK_FALSE(p.notes.empty());
    r.cpus_per_task = 3;  // an odd count: the GPU's core, one more core would be 4: a single thread
    p = gputopo::make_plan(n, r);
    CHECK(p.tasks[0].cpus.count() == 3);
    CHECK(p.tasks[0].cpus.contains(CpuSet::parse_list("0,6")));

    // The step's cpuset (allowed) bounds it: -c 3 with only 0,6 and 1 allowed.
    r.allowed_cpus = CpuSet::parse_list("0-1,6");
    p = gputopo::make_plan(n, r);
    CHECK(p.tasks[0].cpus.to_list() == "0-1,6");
    // Fewer allowed than asked: all of them, no more.
    r.cpus_per_task = 8;
    CHECK(gputopo::make_plan(n, r).tasks[0].cpus.to_list() == "0-1,6");

    // Two tasks, one GPU each, -c 4, the whole node allowed: each keeps its
    // GPU's core and takes free cores of NUMA 2; they never share a CPU.
    r.allowed_cpus.reset();
    r.gpus = {0, 1};
    r.ntasks = 2;
    r.cpus_per_task = 4;
    p = gputopo::make_plan(n, r);
    CHECK(p.tasks[0].cpus.contains(CpuSet::parse_list("0,6")));
    CHECK(p.tasks[1].cpus.contains(CpuSet::parse_list("1,7")));
    CHECK(p.tasks[0].cpus.count() == 4);
    CHECK(p.tasks[1].cpus.count() == 4);
    CHECK_FALSE(p.tasks[0].cpus.intersects(p.tasks[1].cpus));
    for (const auto& t : p.tasks) CHECK(whole_cores(n, t.cpus));

    // A share that holds N: the first N, whole cores first (unchanged).
    Node two = two_socket_pcie();
    PlanRequest q;
    q.gpus = {0};
    q.cpus_per_task = 2;
    CHECK(gputopo::make_plan(two, q).tasks[0].cpus.to_list() == "0,8");
    // The GPU's NUMA node before the other socket: 4 local cores, -c 10.
    q.cpus_per_task = 10;
    p = gputopo::make_plan(two, q);
    CHECK(p.tasks[0].cpus.contains(CpuSet::parse_list("0-3,8-11")));
    CHECK(p.tasks[0].cpus.count() == 10);
}
