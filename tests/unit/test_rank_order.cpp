// Island-ordered ranks: every task computes the same global order alone.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "spank/framework_task.hpp"
#include "step/framework_env.hpp"
#include "step/slurm_rank_order.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/rank_order.hpp"

using namespace gputopo;

namespace {

constexpr unsigned long kSlurm24_11 = 0x180b05UL;  // 24.11.5, Debian 13


IslandMap islands(const std::string& conf) {
    IslandMap m;
    parse_island_conf(conf, "test.conf", m, nullptr);
    m.seal();
    return m;
}

// Reference written independently: expand everything, group by island name
// in order of first appearance, unknown nodes alone.
struct Ref {
    std::map<std::string, uint64_t> first_rank;
    std::map<std::string, uint64_t> island_first_rank;
    std::map<std::string, uint64_t> island_size;
    std::map<std::string, std::string> island;
    uint64_t islands = 0;
};
Ref reference(const std::vector<std::string>& nodes, const std::vector<uint32_t>& tasks,
              const std::map<std::string, std::string>& island_of) {
    std::vector<std::string> group_order;
    std::map<std::string, std::vector<size_t>> members;
    for (size_t i = 0; i < nodes.size(); ++i) {
        auto it = island_of.find(nodes[i]);
        std::string g = it == island_of.end() ? "node:" + nodes[i] : "island:" + it->second;
        if (!members.count(g)) group_order.push_back(g);
        members[g].push_back(i);
    }
    Ref r;
    uint64_t rank = 0;
    for (const std::string& g : group_order) {
        uint64_t in = 0, size = 0;
        for (size_t i : members[g]) size += tasks[i];
        for (size_t i : members[g]) {
            r.first_rank[nodes[i]] = rank;
            r.island_first_rank[nodes[i]] = in;
            r.island_size[nodes[i]] = size;
            r.island[nodes[i]] = g.substr(g.find(':') + 1);
            rank += tasks[i];
            in += tasks[i];
        }
    }
    r.islands = group_order.size();
    return r;
}

}  // namespace

TEST_CASE("rankorder: tasks per node syntax", "[rankorder]") {
    TaskCounts c = TaskCounts::parse("4(x3),2");
    CHECK(c.nodes() == 4);
    CHECK(c.tasks() == 14);
    CHECK(c.at(0) == 4);
    CHECK(c.at(2) == 4);
    CHECK(c.at(3) == 2);
    CHECK_THROWS_AS(c.at(4), std::out_of_range);
    CHECK(TaskCounts::parse("1").tasks() == 1);
    CHECK(TaskCounts::parse("2,1(x2),8").tasks() == 12);
    for (const char* bad : {"", "x", "4(3)", "4(x)", "4(x0)", "4(x3", "4,,2", "-1", "1234567890"}) {
        INFO(bad);
        try {
            TaskCounts::parse(bad);
            FAIL("accepted");
        } catch (const ParseError& e) {
            CHECK(std::string(e.what()).find("'" + std::string(bad) + "'") != std::string::npos);
            CHECK(std::string(e.what()).find("expected") != std::string::npos);
        }
    }
}

TEST_CASE("rankorder: two leaf switches, node names interleaving them", "[rankorder]") {
    // n1,n3 in leaf1; n2,n4 in leaf2; Slurm orders n1,n2,n3,n4.
    IslandMap m = islands("Island=leaf1 Nodes=n[1,3]\nIsland=leaf2 Nodes=n[2,4]\n");
    Hostlist step = Hostlist::parse("n[1-4]");
    TaskCounts tasks = TaskCounts::parse("2(x4)");
    // Written by hand: leaf1 first (n1 comes first): n1 -> 0,1; n3 -> 2,3; n2 -> 4,5; n4 -> 6,7.
    struct Want {
        const char* node;
        uint32_t local;
        uint64_t rank, island_rank;
        const char* island;
    } want[] = {{"n1", 0, 0, 0, "leaf1"}, {"n1", 1, 1, 1, "leaf1"}, {"n3", 0, 2, 2, "leaf1"},
                {"n3", 1, 3, 3, "leaf1"}, {"n2", 0, 4, 0, "leaf2"}, {"n2", 1, 5, 1, "leaf2"},
                {"n4", 0, 6, 2, "leaf2"}, {"n4", 1, 7, 3, "leaf2"}};
    for (const Want& w : want) {
        INFO(w.node << " task " << w.local);
        IslandPlacement p = place_task(step, tasks, m, w.node, w.local);
        CHECK(p.rank == w.rank);
        CHECK(p.island_rank == w.island_rank);
        CHECK(p.island == w.island);
        CHECK(p.island_known);
        CHECK(p.island_size == 4);
        CHECK(p.island_nodes == 2);
        CHECK(p.num_islands == 2);
        CHECK(p.world == 8);
    }
    auto env = island_env(place_task(step, tasks, m, "n2", 1));
    REQUIRE(env.size() == 5);
    CHECK(env[0] == std::make_pair(std::string(env::kIsland), std::string("leaf2")));
    CHECK(env[1].second == "1");
    CHECK(env[2].second == "4");
    CHECK(env[3].second == "2");
    CHECK(env[4] == std::make_pair(std::string(env::kRank), std::string("5")));
}

TEST_CASE("rankorder: a step inside one island keeps Slurm's order", "[rankorder]") {
    IslandMap m = islands("Island=leaf1 Nodes=n[1-2]\nIsland=leaf2 Nodes=n[3-4]\n");
    Hostlist step = Hostlist::parse("n[3-4]");
    TaskCounts tasks = TaskCounts::parse("3,1");
    CHECK(place_task(step, tasks, m, "n3", 2).rank == 2);
    IslandPlacement p = place_task(step, tasks, m, "n4", 0);
    CHECK(p.rank == 3);
    CHECK(p.island == "leaf2");
    CHECK(p.num_islands == 1);
    CHECK(p.island_size == 4);
}

TEST_CASE("rankorder: nodes without island information are islands of their own", "[rankorder]") {
    IslandMap m = islands("Island=A Nodes=n[2,4]\n");
    Hostlist step = Hostlist::parse("n[1-5]");
    TaskCounts tasks = TaskCounts::uniform(5, 1);
    // Groups by first appearance: {n1}, {n2,n4}, {n3}, {n5}.
    CHECK(place_task(step, tasks, m, "n1", 0).rank == 0);
    CHECK(place_task(step, tasks, m, "n2", 0).rank == 1);
    CHECK(place_task(step, tasks, m, "n4", 0).rank == 2);
    IslandPlacement p3 = place_task(step, tasks, m, "n3", 0);
    CHECK(p3.rank == 3);
    CHECK_FALSE(p3.island_known);
    CHECK(p3.island == "n3");
    CHECK(p3.island_size == 1);
    CHECK(p3.island_index == 2);
    CHECK(p3.num_islands == 4);
    CHECK(place_task(step, tasks, m, "n5", 0).rank == 4);
    // No island information at all: Slurm's block order.
    IslandMap none;
    for (int i = 1; i <= 5; ++i) CHECK(place_task(step, tasks, none, "n" + std::to_string(i), 0).rank == uint64_t(i - 1));
}

TEST_CASE("rankorder: bad inputs", "[rankorder]") {
    IslandMap m;
    Hostlist step = Hostlist::parse("n[1-4]");
    CHECK_THROWS_WITH(place_task(step, TaskCounts::parse("1(x4)"), m, "n9", 0),
                      Catch::Contains("'n9' is not in the step's node list 'n[1-4]'"));
    CHECK_THROWS_WITH(place_task(step, TaskCounts::parse("1(x3)"), m, "n1", 0),
                      Catch::Contains("has 4 nodes but the tasks per node cover 3"));
    CHECK_THROWS_AS(place_task(step, TaskCounts::parse("2(x4)"), m, "n1", 2), PlanError);
}

TEST_CASE("rankorder: intra-node order follows the planner's islands", "[rankorder]") {
    Plan plan;
    for (int t = 0; t < 5; ++t) {
        TaskBinding b;
        b.task = t;
        b.island = (t == 4) ? -1 : (t % 2 == 0 ? 1 : 0);
        plan.tasks.push_back(b);
    }
    // islands: t0=1 t1=0 t2=1 t3=0 t4=none -> order t1,t3,t0,t2,t4
    std::vector<uint32_t> pos = local_positions(plan);
    CHECK(pos == std::vector<uint32_t>{2, 0, 3, 1, 4});
}

TEST_CASE("rankorder: random layouts agree with an independent reference", "[rankorder]") {
    uint64_t seed = 12345;
    auto rnd = [&](uint64_t n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return (seed >> 33) % n;
    };
    for (int trial = 0; trial < 20; ++trial) {
        int n = 1 + static_cast<int>(rnd(60));
        std::vector<std::string> nodes;
        std::vector<uint32_t> tasks;
        std::map<std::string, std::string> island_of;
        std::map<std::string, std::vector<std::string>> members;
        std::set<int> used;
        while (static_cast<int>(nodes.size()) < n) {
            int num = static_cast<int>(rnd(200));
            if (!used.insert(num).second) continue;
            char buf[16];
            std::snprintf(buf, sizeof buf, "c%03d", num);
            nodes.push_back(buf);
            tasks.push_back(1 + static_cast<uint32_t>(rnd(8)));
            if (rnd(5) != 0) {
                std::string isl = "isl" + std::to_string(rnd(6));
                island_of[buf] = isl;
                members[isl].push_back(buf);
            }
        }
        std::string conf;
        for (auto& [isl, names] : members) {
            conf += "Island=" + isl + " Nodes=";
            for (size_t i = 0; i < names.size(); ++i) conf += (i ? "," : "") + names[i];
            conf += "\n";
        }
        IslandMap m = islands(conf);
        Hostlist step = Hostlist::from_names(nodes);
        std::string tpn;
        for (size_t i = 0; i < tasks.size(); ++i) tpn += (i ? "," : "") + std::to_string(tasks[i]);
        TaskCounts counts = TaskCounts::parse(tpn);
        Ref ref = reference(nodes, tasks, island_of);

        std::set<uint64_t> ranks;
        std::vector<NodePlacement> table = place_step(step, counts, m);
        REQUIRE(table.size() == nodes.size());
        uint64_t expected_first = 0;
        for (const NodePlacement& row : table) {
            CHECK(row.first_rank == expected_first);  // rows come in rank order
            expected_first += row.tasks;
            CHECK(row.first_rank == ref.first_rank[row.node]);
            CHECK(row.island == ref.island[row.node]);
            CHECK(row.island_size == ref.island_size[row.node]);
        }
        for (size_t i = 0; i < nodes.size(); ++i) {
            for (uint32_t t = 0; t < tasks[i]; ++t) {
                IslandPlacement p = place_task(step, counts, m, nodes[i], t);
                CHECK(p.rank == ref.first_rank[nodes[i]] + t);
                CHECK(p.island_rank == ref.island_first_rank[nodes[i]] + t);
                CHECK(p.island_size == ref.island_size[nodes[i]]);
                CHECK(p.num_islands == ref.islands);
                CHECK(p.island == ref.island[nodes[i]]);
                ranks.insert(p.rank);
            }
        }
        CHECK(ranks.size() == counts.tasks());
        CHECK(*ranks.rbegin() == counts.tasks() - 1);
    }
}

TEST_CASE("rankorder: 100,000 nodes in 100 interleaved islands", "[rankorder]") {
    // Island k = nodes whose number is k mod 100; Slurm's list gpu[000001-100000].
    std::string conf;
    for (int k = 0; k < 100; ++k) {
        conf += "Island=i" + std::to_string(k) + " Nodes=gpu[";
        bool first = true;
        for (int n = (k == 0 ? 100 : k); n <= 100000; n += 100) {
            char buf[16];
            std::snprintf(buf, sizeof buf, "%06d", n);
            conf += (first ? "" : ",") + std::string(buf);
            first = false;
        }
        conf += "]\n";
    }
    IslandMap m = islands(conf);
    Hostlist step = Hostlist::parse("gpu[000001-100000]");
    TaskCounts tasks = TaskCounts::uniform(100000, 4);
    // First appearance: islands 1,2,...,99 then 0. Node n in island k is the
    // j-th of its island with j = (n-k)/100 (k>0) or n/100-1 (k=0).
    auto expected_rank = [](int n, int local) {
        int k = n % 100;
        uint64_t order = k == 0 ? 99 : static_cast<uint64_t>(k - 1);
        uint64_t j = k == 0 ? static_cast<uint64_t>(n / 100 - 1) : static_cast<uint64_t>((n - k) / 100);
        return order * 4000 + j * 4 + static_cast<uint64_t>(local);
    };
    for (int n : {1, 2, 99, 100, 101, 4242, 50000, 99999, 100000}) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "gpu%06d", n);
        for (int local : {0, 3}) {
            INFO(buf << " " << local);
            IslandPlacement p = place_task(step, tasks, m, buf, static_cast<uint32_t>(local));
            CHECK(p.rank == expected_rank(n, local));
            CHECK(p.island == "i" + std::to_string(n % 100));
            CHECK(p.island_size == 4000);
            CHECK(p.island_nodes == 1000);
            CHECK(p.num_islands == 100);
            CHECK(p.world == 400000);
        }
    }
    std::vector<NodePlacement> table = place_step(step, tasks, m);
    REQUIRE(table.size() == 100000);
    std::vector<bool> seen(100000, false);
    for (const NodePlacement& row : table) {
        int n = std::stoi(row.node.substr(3));
        REQUIRE(row.first_rank == expected_rank(n, 0));
        seen[row.first_rank / 4] = true;
    }
    CHECK(std::count(seen.begin(), seen.end(), true) == 100000);
}

// ---- step/task_ranks (plugin) and the launcher's --rank-order=island ----
#include "launcher/ranks/island_rank.hpp"
#include "step/task_ranks.hpp"

using gputopo::step::task_islands;
using gputopo::step::TaskIslands;
using EnvReader = gputopo::step::Getenv;

namespace {

EnvReader env_of(std::map<std::string, std::string> vars) {
    return [vars](const std::string& n) -> std::optional<std::string> {
        auto it = vars.find(n);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

Plan plan_with_islands(std::vector<int> islands) {
    Plan p;
    for (size_t t = 0; t < islands.size(); ++t) {
        TaskBinding b;
        b.task = static_cast<int>(t);
        b.island = islands[t];
        p.tasks.push_back(b);
    }
    return p;
}

}  // namespace

TEST_CASE("rankorder: task_islands reads the step from Slurm's variables", "[rankorder]") {
    IslandMap m = islands("Island=leaf1 Nodes=n[1-2]\nIsland=leaf2 Nodes=n[3-4]\n");
    auto env = env_of({{"SLURM_STEP_NODELIST", "n[1-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"},
                       {"SLURM_TOPOLOGY_ADDR", "spine.leaf2.n3"}, {"SLURM_TOPOLOGY_ADDR_PATTERN", "switch.switch.node"}});
    // Intra-node order: task 0 on island 1, task 1 on island 0 -> task 1 first.
    Plan plan = plan_with_islands({1, 0});
    TaskIslands t0 = task_islands(m, "n3", plan, 0, env);
    TaskIslands t1 = task_islands(m, "n3", plan, 1, env);
    CHECK(t1.placement.rank == 4);
    CHECK(t0.placement.rank == 5);
    CHECK(t0.placement.island == "leaf2");
    CHECK(t0.warning.empty());  // the leaf agrees with SLURM_TOPOLOGY_ADDR
    REQUIRE(t0.set.size() == 6);
    CHECK(t0.set[0].name == env::kIsland);
    CHECK(t0.set[0].value == "leaf2");
    CHECK(t0.set[4].value == "5");
    CHECK(t0.set[5].name == env::kNodeRankIsland);  // n3 is the third node in island order
    CHECK(t0.set[5].value == "2");
    CHECK_FALSE(t0.set[0].user_wins);
    CHECK(t0.verbose.find("xisland=leaf2 island_rank=1/4 rank=5/8 islands=2 (gputopo.conf)") != std::string::npos);

    // Job-level variables when the step ones are missing.
    auto job = env_of({{"SLURM_JOB_NODELIST", "n[3-4]"}, {"SLURM_TASKS_PER_NODE", "1(x2)"}});
    CHECK(task_islands(m, "n4", plan_with_islands({0}), 0, job).placement.rank == 1);
    // Missing or bad variables name themselves.
    CHECK_THROWS_WITH(task_islands(m, "n4", plan, 0, env_of({})), Catch::Contains("SLURM_STEP_NODELIST"));
    CHECK_THROWS_WITH(task_islands(m, "n4", plan, 0, env_of({{"SLURM_STEP_NODELIST", "n[1-"}, {"SLURM_STEP_TASKS_PER_NODE", "1"}})),
                      Catch::Contains("SLURM_STEP_NODELIST: bad hostlist 'n[1-'"));
    CHECK_THROWS_WITH(task_islands(m, "n4", plan, 0, env_of({{"SLURM_STEP_NODELIST", "n4"}, {"SLURM_STEP_TASKS_PER_NODE", "x"}})),
                      Catch::Contains("SLURM_STEP_TASKS_PER_NODE: bad tasks per node 'x'"));
}

TEST_CASE("rankorder: task_islands warns when SLURM_TOPOLOGY_ADDR disagrees with topology.conf", "[rankorder]") {
    IslandMap m;
    parse_slurm_topology("SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n", "topology.conf", m);
    m.seal();
    auto env = env_of({{"SLURM_STEP_NODELIST", "n[1-5]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x5)"},
                       {"SLURM_TOPOLOGY_ADDR", "spine.leaf9.n3"}, {"SLURM_TOPOLOGY_ADDR_PATTERN", "switch.switch.node"}});
    Plan plan = plan_with_islands({0});
    TaskIslands t = task_islands(m, "n3", plan, 0, env);
    CHECK(t.warning.find("under switch 'leaf9' but the island files say 'leaf2'") != std::string::npos);
    CHECK(t.placement.source == IslandSource::TopologyTree);
    TaskIslands alone = task_islands(m, "n5", plan, 0, env);
    CHECK_FALSE(alone.placement.island_known);
    CHECK(alone.warning.find("no island file names it") != std::string::npos);
    auto agree = env_of({{"SLURM_STEP_NODELIST", "n[1-5]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x5)"},
                         {"SLURM_TOPOLOGY_ADDR", "spine.leaf2.n3"}});
    CHECK(task_islands(m, "n3", plan, 0, agree).warning.empty());
}

TEST_CASE("rankorder: launcher --rank-order=island sets RANK from GPUTOPO_RANK or an islands file", "[rankorder]") {
    using namespace gputopo::launch;
    Options opt;
    auto base = std::map<std::string, std::string>{{"SLURM_STEP_NODELIST", "n[1-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"}};
    // Off by default.
    CHECK(island_rank(opt, "n3", 0, env_of(base)).rank.empty());
    opt.rank_order = "island";
    // From the plugin.
    auto with_plugin = base;
    with_plugin["GPUTOPO_RANK"] = "6";
    CHECK(island_rank(opt, "n3", 0, env_of(with_plugin)).rank == "6");
    // No plugin, no file, no Slurm topology: RANK stays, with a note.
    base["SLURM_CONF"] = "/nonexistent/slurm.conf";
    IslandRankOutcome none = island_rank(opt, "n3", 0, env_of(base));
    CHECK(none.rank.empty());
    CHECK(none.note.find("RANK stays SLURM_PROCID") != std::string::npos);
    // From an islands file: rackA = n1,n3 -> n3's tasks are ranks 2,3.
    char path[] = "/tmp/gputopo-rank-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    std::string conf = "Island=rackA Nodes=n[1,3]\nIsland=rackB Nodes=n[2,4]\n";
    REQUIRE(write(fd, conf.data(), conf.size()) == static_cast<ssize_t>(conf.size()));
    close(fd);
    opt.islands = path;
    IslandRankOutcome r = island_rank(opt, "n3", 1, env_of(base));
    unlink(path);
    CHECK(r.rank == "3");
    CHECK(r.node_rank == "1");  // rackA = n1, n3: n3 is the second node in island order
    REQUIRE(r.env.size() == 6);
    CHECK(r.env[0].value == "rackA");
    // Zero-config: Slurm's topology.conf next to SLURM_CONF gives the same islands as the file above.
    opt.islands.clear();
    char dir[] = "/tmp/gputopo-slurmconf-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const std::string topo = std::string(dir) + "/topology.conf";
    {
        std::ofstream(topo) << "SwitchName=leaf1 Nodes=n[1,3]\nSwitchName=leaf2 Nodes=n[2,4]\n";
    }
    auto with_slurm = base;
    with_slurm["SLURM_CONF"] = std::string(dir) + "/slurm.conf";
    IslandRankOutcome slurm = island_rank(opt, "n3", 1, env_of(with_slurm));
    unlink(topo.c_str());
    rmdir(dir);
    CHECK(slurm.rank == r.rank);
    CHECK(slurm.note.find("topology.conf") != std::string::npos);
    // apply_island_rank replaces RANK, keeping the user-wins rule.
    std::vector<EnvVar> wanted{{"RANK", "4", true}, {"LOCAL_RANK", "1", true}};
    apply_island_rank(wanted, r.rank);
    CHECK(wanted[0].value == "3");
    CHECK(wanted[0].user_wins);
}

namespace {

// Slurm 26.05, topology/block with blocks b1=n[2,4], b2=n[1,3] (listed out of name order): ranks follow
// the blocks, 2 per node: n2 0-1, n4 2-3, n1 4-5, n3 6-7; SLURM_NODEID and the node list stay in name order.
IslandMap blocks_out_of_order() {
    IslandMap m;
    m.add("b1", Hostlist::parse("n[2,4]"), IslandSource::TopologyBlock, "topology.conf:1");
    m.add("b2", Hostlist::parse("n[1,3]"), IslandSource::TopologyBlock, "topology.conf:2");
    m.seal();
    return m;
}

std::map<std::string, std::string> task_env(int nodeid, int procid, int localid) {
    return {{"SLURM_STEP_NODELIST", "n[1-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"},
            {"SLURM_NODEID", std::to_string(nodeid)}, {"SLURM_PROCID", std::to_string(procid)},
            {"SLURM_LOCALID", std::to_string(localid)}, {"SLURM_STEP_NUM_TASKS", "8"},
            {"SLURM_STEP_NUM_NODES", "4"}, {"SLURM_JOB_ID", "9"}, {"SLURM_STEP_ID", "0"}};
}

step::Getenv getenv_of(const std::map<std::string, std::string>& m) {
    return [m](const std::string& n) -> std::optional<std::string> {
        auto it = m.find(n);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}

}  // namespace

TEST_CASE("Slurm's rank order: the node of rank 0 and each node's GROUP_RANK from the ranks it holds",
          "[rank_order][slurm-order]") {
    const IslandMap blocks = blocks_out_of_order();
    // node name -> (SLURM_NODEID, lowest rank, position in rank order)
    const std::map<std::string, std::array<int, 3>> placed = {
        {"n1", {0, 4, 2}}, {"n2", {1, 0, 0}}, {"n3", {2, 6, 3}}, {"n4", {3, 2, 1}}};
    for (const auto& [name, p] : placed) {
        INFO(name);
        for (bool prefer : {true, false}) {
            const auto env = task_env(p[0], p[1] + 1, 1);
            const step::SlurmNodeOrder o = step::step_node_order(getenv_of(env), static_cast<uint64_t>(p[1]), &blocks, prefer);
            CHECK(o.rank0_node == "n2");
            CHECK(o.node_rank == p[2]);
            CHECK(o.order == "topology");
        }
        // Without Slurm's topology at hand (launcher, plugin before 26.05): GROUP_RANK still from the ranks.
        const auto env = task_env(p[0], p[1] + 1, 1);
        CHECK(step::node_rank_from_ranks(getenv_of(env)) == p[2]);
        // The plugin's framework variables: RANK = GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK, as torchrun's.
        spank::FrameworkTask f = spank::framework_for_task(getenv_of(env), {}, "n2");
        std::map<std::string, std::string> set;
        for (const auto& v : f.set) set[v.name] = v.value;
        CHECK(set["GROUP_RANK"] == std::to_string(p[2]));
        CHECK(set["NODE_RANK"] == std::to_string(p[2]));
        CHECK(std::stoi(set["RANK"]) == std::stoi(set["GROUP_RANK"]) * std::stoi(set["LOCAL_WORLD_SIZE"]) +
                                           std::stoi(set["LOCAL_RANK"]));
        CHECK(set["MASTER_ADDR"] == "n2");
    }
    // Name order (22.05-25.11, or CR_NO_DIST_TOPO_BLOCK): n1 holds 0-1, as SLURM_NODEID says.
    for (int node = 0; node < 4; ++node) {
        const auto env = task_env(node, 2 * node, 0);
        const step::SlurmNodeOrder o = step::step_node_order(getenv_of(env), static_cast<uint64_t>(2 * node), &blocks, false);
        CHECK(o.rank0_node == "n1");
        CHECK(o.node_rank == node);
        CHECK(o.order == "node list");
        CHECK(step::node_rank_from_ranks(getenv_of(env)) == node);
    }
    // A node whose place fits both orders (n1 first in both: blocks b1=n[1,3], b2=n[2,4]): the
    // release's default decides, and both say n1 holds rank 0.
    IslandMap same;
    same.add("b1", Hostlist::parse("n[1,3]"), IslandSource::TopologyBlock, "t:1");
    same.add("b2", Hostlist::parse("n[2,4]"), IslandSource::TopologyBlock, "t:2");
    same.seal();
    CHECK(step::step_node_order(getenv_of(task_env(0, 0, 0)), 0, &same, true).rank0_node == "n1");
    // Ranks that fit neither order (-m cyclic): unknown, the caller keeps the node list's first.
    CHECK(step::step_node_order(getenv_of(task_env(1, 1, 0)), 1, &blocks, true).rank0_node.empty());
    // Uneven nodes, an order that does not fit: GROUP_RANK is left out rather than taken from SLURM_NODEID.
    auto uneven = task_env(1, 0, 0);
    uneven["SLURM_STEP_TASKS_PER_NODE"] = "3,2(x3)";
    CHECK(step::node_rank_from_ranks(getenv_of(uneven)) == -1);
}

TEST_CASE("island mode keeps Slurm's ranks where Slurm's order is island by island already", "[rank_order][slurm-order]") {
    const IslandMap blocks = blocks_out_of_order();  // Slurm's: b1=n[2,4], b2=n[1,3]
    const auto env = task_env(1, 0, 0);              // n2 holds ranks 0-1: topology order
    const step::SlurmNodeOrder o = step::step_node_order(getenv_of(env), 0, &blocks, true);
    REQUIRE(o.order == "topology");
    // A 26.05 Slurm with a default slurm.conf.
    const step::SlurmPlacement plain;
    auto keeps = [&](const step::SlurmPlacement& p, bool release_26_05, const std::map<std::string, std::string>& e,
                     const step::SlurmNodeOrder& order, const IslandMap& islands) {
        return step::slurm_order_keeps_islands(p, release_26_05 ? step::kSlurm26_05 : kSlurm24_11, getenv_of(e), order, blocks,
                                               islands);
    };
    // Island mode over Slurm's own blocks (no islands=): the same islands, one run each.
    CHECK(keeps(plain, true, env, o, blocks));
    // gputopo.conf islands that Slurm's blocks also keep together (one island per node pair as
    // the blocks, named otherwise; a node no island names is alone).
    IslandMap racks;
    racks.add("rackA", Hostlist::parse("n[2,4]"), IslandSource::GputopoConf, "gputopo.conf:1");
    racks.add("rackB", Hostlist::parse("n1"), IslandSource::GputopoConf, "gputopo.conf:2");
    racks.seal();
    CHECK(keeps(plain, true, env, o, racks));
    // Islands across Slurm's blocks (n1 with n2): Slurm's order splits them; island order stands.
    IslandMap across;
    across.add("x", Hostlist::parse("n[1-2]"), IslandSource::GputopoConf, "gputopo.conf:1");
    across.add("y", Hostlist::parse("n[3-4]"), IslandSource::GputopoConf, "gputopo.conf:2");
    across.seal();
    CHECK_FALSE(keeps(plain, true, env, o, across));
    // Name order (before 26.05, or a node whose ranks fit only it): island order stands.
    const auto named = task_env(0, 0, 0);
    const step::SlurmNodeOrder by_name = step::step_node_order(getenv_of(named), 0, &blocks, false);
    REQUIRE(by_name.order == "node list");
    CHECK_FALSE(keeps(plain, true, named, by_name, blocks));
    // Before 26.05 Slurm places by node order: nothing kept, whatever the ranks suggest.
    CHECK_FALSE(keeps(plain, false, env, o, blocks));
}

TEST_CASE("keep Slurm's ranks: BlockAsNodeRank, CR_NO_DIST_TOPO_BLOCK and segments as slurm.conf and the job say",
          "[rank_order][slurm-order][segment]") {
    const IslandMap blocks = blocks_out_of_order();  // b1=n[2,4], b2=n[1,3]
    const auto env = task_env(1, 0, 0);
    const step::SlurmNodeOrder o = step::step_node_order(getenv_of(env), 0, &blocks, true);
    REQUIRE(o.order == "topology");
    auto keeps = [&](const step::SlurmPlacement& p, bool release_26_05, const std::map<std::string, std::string>& e,
                     const IslandMap& islands) {
        return step::slurm_order_keeps_islands(p, release_26_05 ? step::kSlurm26_05 : kSlurm24_11, getenv_of(e), o, blocks,
                                               islands);
    };
    const std::map<std::string, std::string> none;
    // slurm.conf lines as sites write them (Slurm matches the words case-insensitively).
    const std::string conf = "ClusterName=c\nSelectType=select/cons_tres\n"
                             "SelectTypeParameters=CR_Core_Memory,CR_NO_DIST_TOPO_BLOCK\n"
                             "TopologyPlugin=topology/block\nTopologyParam=RouteTree,BlockAsNodeRank\n";
    const step::SlurmPlacement both = step::parse_slurm_placement(conf, getenv_of(none));
    CHECK(both.no_dist_topo_block);
    CHECK(both.block_as_node_rank);
    const step::SlurmPlacement no_dist =
        step::parse_slurm_placement("SelectTypeParameters=CR_Core_Memory,cr_no_dist_topo_block\n", getenv_of(none));
    CHECK(no_dist.no_dist_topo_block);
    CHECK_FALSE(no_dist.block_as_node_rank);
    const step::SlurmPlacement block_rank =
        step::parse_slurm_placement("topologyparam=BlockAsNodeRank # blocks\nbroken line\n", getenv_of(none));
    CHECK(block_rank.block_as_node_rank);  // the line Slurm would reject does not hide it
    CHECK_FALSE(step::parse_slurm_placement("TopologyParam=SwitchAsNodeRank\n", getenv_of(none)).block_as_node_rank);

    // CR_NO_DIST_TOPO_BLOCK on 26.05: back to node order, island order is gputopo's job.
    CHECK_FALSE(keeps(no_dist, true, env, blocks));
    // BlockAsNodeRank: block by block from 25.11 (with CR_NO_DIST_TOPO_BLOCK too); 24.11 ignores
    // the word (node-list order on its daemons: t_block_rank.sh).
    CHECK_FALSE(keeps(block_rank, false, env, blocks));
    CHECK(step::slurm_order_keeps_islands(block_rank, step::kSlurm25_11, getenv_of(env), o, blocks, blocks));
    CHECK(step::slurm_order_keeps_islands(both, step::kSlurm25_11, getenv_of(env), o, blocks, blocks));
    CHECK(keeps(both, true, env, blocks));
    // With BlockAsNodeRank Slurm writes the node list in its block order and numbers
    // SLURM_NODEID by it (26.05 daemons, t_block_rank.sh): n2 is node 0 of n[2,4,1,3]; the
    // ranks go in node-list order, which is block by block.
    auto listed = task_env(0, 0, 0);
    listed["SLURM_STEP_NODELIST"] = "n[2,4,1,3]";
    const step::SlurmNodeOrder lo = step::step_node_order(getenv_of(listed), 0, &blocks, true);
    REQUIRE(lo.order == "node list");
    CHECK(lo.rank0_node == "n2");
    CHECK(step::slurm_order_keeps_islands(block_rank, step::kSlurm25_11, getenv_of(listed), lo, blocks, blocks));
    CHECK_FALSE(step::slurm_order_keeps_islands(block_rank, kSlurm24_11, getenv_of(listed), lo, blocks, blocks));
    // Node-list order over a list that is not block by block (n[1-4], rank 0 on n1): nothing kept.
    const auto plain_list = task_env(0, 0, 0);
    const step::SlurmNodeOrder po = step::step_node_order(getenv_of(plain_list), 0, &blocks, true);
    REQUIRE(po.order == "node list");
    CHECK_FALSE(step::slurm_order_keeps_islands(block_rank, step::kSlurm25_11, getenv_of(plain_list), po, blocks, blocks));
    CHECK_FALSE(block_rank.topology_order(kSlurm24_11));
    CHECK(block_rank.topology_order(step::kSlurm25_11));
    CHECK_FALSE(no_dist.topology_order(step::kSlurm25_11));
    CHECK(step::SlurmPlacement{}.topology_order(step::kSlurm26_05));

    // Segments: SLURM_JOB_SEGMENT_SIZE as sbatch --segment=2 sets it. In Slurm's order
    // (n2,n4 | n1,n3) the segments are {n2,n4} and {n1,n3}; islands that cut them
    // (x=n[1-2], y=n[3-4]) would tear a segment apart: Slurm's ranks stay.
    IslandMap across;
    across.add("x", Hostlist::parse("n[1-2]"), IslandSource::GputopoConf, "gputopo.conf:1");
    across.add("y", Hostlist::parse("n[3-4]"), IslandSource::GputopoConf, "gputopo.conf:2");
    across.seal();
    auto with_segment = [&](const char* s) {
        auto e = env;
        e["SLURM_JOB_SEGMENT_SIZE"] = s;
        return e;
    };
    const step::SlurmPlacement seg2 = step::parse_slurm_placement("", getenv_of(with_segment("2")));
    CHECK(seg2.segment_size == 2);
    CHECK(keeps(seg2, true, with_segment("2"), across));
    // Segments of one node are never split: island order stands.
    const step::SlurmPlacement seg1 = step::parse_slurm_placement("", getenv_of(with_segment("1")));
    CHECK(seg1.segment_size == 1);
    CHECK_FALSE(keeps(seg1, true, with_segment("1"), across));
    // Islands of one node each: every 2-node segment spans two of them: kept.
    IslandMap singles;
    for (const char* n : {"n1", "n2", "n3", "n4"}) singles.add(n, Hostlist::parse(n), IslandSource::GputopoConf, "x");
    singles.seal();
    CHECK(keeps(seg2, true, with_segment("2"), singles));
    // But CR_NO_DIST_TOPO_BLOCK: the segments are not in Slurm's rank order; island order stands.
    step::SlurmPlacement seg_no_dist = no_dist;
    seg_no_dist.segment_size = 2;
    CHECK_FALSE(keeps(seg_no_dist, true, with_segment("2"), across));
    // Bad SLURM_JOB_SEGMENT_SIZE values read as none.
    for (const char* bad : {"0", "x", "-2", "2x", "99999999", ""})
        CHECK(step::parse_slurm_placement("", getenv_of(with_segment(bad))).segment_size == 0);
}

TEST_CASE("read_slurm_placement reads the slurm.conf SLURM_CONF names", "[rank_order][slurm-order]") {
    const std::string dir = "/tmp/gputopo-placement-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    {
        std::ofstream f(dir + "/slurm.conf");
        f << "ClusterName=c\nTopologyPlugin=topology/block\nTopologyParam=BlockAsNodeRank\n";
    }
    const std::map<std::string, std::string> proc = {{"SLURM_CONF", dir + "/slurm.conf"}};
    const std::map<std::string, std::string> job = {{"SLURM_JOB_SEGMENT_SIZE", "4"}};
    const step::SlurmPlacement p = step::read_slurm_placement(getenv_of(proc), getenv_of(job));
    CHECK(p.block_as_node_rank);
    CHECK(p.segment_size == 4);
    // This build's release decides: BlockAsNodeRank counts from 25.11.
    CHECK(step::slurm_places_by_topology(getenv_of(proc)) == (step::built_slurm_release() >= step::kSlurm25_11));
    // No such file: as an empty slurm.conf.
    const std::map<std::string, std::string> gone = {{"SLURM_CONF", dir + "/none.conf"}};
    CHECK_FALSE(step::read_slurm_placement(getenv_of(gone), getenv_of(job)).block_as_node_rank);
    std::filesystem::remove_all(dir);
}

TEST_CASE("the lowest rank on a task's node: SLURM_PROCID - SLURM_LOCALID, range-checked", "[rank_order][slurm-order]") {
    CHECK(step::node_first_rank(getenv_of({{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}})) == std::optional<uint64_t>(4));
    CHECK_FALSE(step::node_first_rank(getenv_of({{"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "2"}})));
    CHECK_FALSE(step::node_first_rank(getenv_of({{"SLURM_PROCID", "x"}, {"SLURM_LOCALID", "0"}})));
    CHECK_FALSE(step::node_first_rank(getenv_of({{"SLURM_PROCID", "1234567890"}, {"SLURM_LOCALID", "0"}})));
    CHECK_FALSE(step::node_first_rank(getenv_of({{"SLURM_LOCALID", "0"}})));
}

TEST_CASE("task_ranks: one step-level call, one keep-Slurm's-ranks decision, the plugin's and the launcher's (issue 35)",
          "[rankorder]") {
    char path[] = "/tmp/gputopo-ranks-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const std::string conf = "Island=rackA Nodes=n[1,3]\nIsland=rackB Nodes=n[2,4]\n";
    REQUIRE(write(fd, conf.data(), conf.size()) == static_cast<ssize_t>(conf.size()));
    close(fd);
    std::map<std::string, std::string> vars{{"SLURM_STEP_NODELIST", "n[1-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"},
                                            {"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "2"},
                                            {"SLURM_CONF", "/nonexistent/slurm.conf"}};
    gputopo::step::RanksRequest req;
    req.islands = true;
    req.islands_conf = path;
    req.slurm_dir = "/nonexistent";
    auto ranks = [&](const std::map<std::string, std::string>& v) {
        const gputopo::step::StepRanks s = gputopo::step::step_ranks(req, env_of(v), {});
        return std::make_pair(s.kept, gputopo::step::task_ranks(s, "n3", gputopo::step::local_id_order(2), 1, env_of(v)));
    };
    gputopo::launch::Options opt;
    opt.rank_order = "island";
    opt.islands = path;
    // Island order: rackA = n1, n3: n3's second task is rank 3, its node the second.
    auto [kept, t] = ranks(vars);
    CHECK(kept == gputopo::step::KeptRanks::None);
    CHECK(t.rank == "3");
    CHECK(t.node_rank == "1");
    CHECK(t.island == "rackA");
    gputopo::launch::IslandRankOutcome l = gputopo::launch::island_rank(opt, "n3", 1, env_of(vars));
    CHECK(l.rank == t.rank);
    CHECK(l.node_rank == t.node_rank);
    // GPUTOPO_RANK_ORDER=slurm (gputopo run's slots): the same call keeps SLURM_PROCID.
    auto slurm = vars;
    slurm["GPUTOPO_RANK_ORDER"] = "slurm";
    auto [kept2, t2] = ranks(slurm);
    CHECK(kept2 == gputopo::step::KeptRanks::RankOrderSlurm);
    CHECK(t2.rank == "5");
    CHECK(t2.node_rank == "2");  // 5 / 2 tasks per node
    CHECK(t2.island == "rackA");
    gputopo::launch::IslandRankOutcome l2 = gputopo::launch::island_rank(opt, "n3", 1, env_of(slurm));
    CHECK(l2.rank == "5");
    CHECK(l2.node_rank == "2");
    // A layout places ranks itself: its GPUTOPO_RANK replaces the island order's.
    req.layout = {"tp=2", "node", ""};
    auto [kept3, t3] = ranks(vars);
    CHECK(kept3 == gputopo::step::KeptRanks::None);
    CHECK(t3.layout.problem.empty());
    CHECK(t3.rank == t3.layout.rank);
    CHECK(std::count_if(t3.set.begin(), t3.set.end(), [](const EnvVar& v) { return v.name == "GPUTOPO_RANK"; }) == 1);
    unlink(path);
}
