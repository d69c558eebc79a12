// The plugin's framework variables (spank/framework_task.hpp): the launcher's
// own computation, in island order when the task has island variables, never
// over a user's value; MASTER_PORT / MASTER_ADDR helpers.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "launcher/ranks/island_rank.hpp"
#include "launcher/options/options.hpp"
#include "spank/framework_task.hpp"
#include "step/framework_env.hpp"
#include "step/option_parser.hpp"
#include "step/task_ranks.hpp"
#include "topo/core/env_names.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/layout_placement.hpp"

using namespace gputopo;

namespace {
step::Getenv env_of(std::map<std::string, std::string> m) {
    return [m](const std::string& n) -> std::optional<std::string> {
        auto it = m.find(n);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}
std::string value(const std::vector<EnvVar>& v, const std::string& n) {
    for (const auto& e : v)
        if (e.name == n) return e.value;
    return "<unset>";
}
std::map<std::string, std::string> slurm_task() {
    return {{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "2"}, {"SLURM_STEP_NUM_TASKS", "8"},
            {"SLURM_STEP_NUM_NODES", "4"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"}, {"SLURM_STEP_NODELIST", "n[1-4]"},
            {"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "0"}};
}
// The node's ranks as one aligned block: its index, else -1 (computed from the placement).
long block_of(const LayoutPlacement& p, uint64_t node, uint32_t n) {
    std::vector<uint64_t> r;
    for (uint32_t t = 0; t < n; ++t) r.push_back(p.rank(node, t));
    std::sort(r.begin(), r.end());
    for (uint32_t t = 0; t < n; ++t)
        if (r[t] != r[0] + t) return -1;
    return r[0] % n == 0 ? long(r[0] / n) : -1;
}
}  // namespace

TEST_CASE("plugin framework variables: torchrun's identities from Slurm's, island order, user wins", "[framework]") {
    auto f = spank::framework_for_task(env_of(slurm_task()), {}, "127.0.0.1");
    CHECK(value(f.set, "RANK") == "5");
    CHECK(value(f.set, "LOCAL_RANK") == "1");
    CHECK(value(f.set, "WORLD_SIZE") == "8");
    CHECK(value(f.set, "LOCAL_WORLD_SIZE") == "2");
    CHECK(value(f.set, "GROUP_RANK") == "2");
    CHECK(value(f.set, "NODE_RANK") == "2");
    CHECK(value(f.set, "MASTER_ADDR") == "127.0.0.1");
    CHECK(value(f.set, "MASTER_PORT") == std::to_string(step::master_port(4242, 0, 20000, 29999)));
    CHECK(value(f.set, "GPUTOPO_FRAMEWORK_SET").find("RANK,") == 0);

    // Island order: node n3 (node id 2) is second in its order.
    std::vector<EnvVar> islands = {{"GPUTOPO_RANK", "3", false}, {"GPUTOPO_NODE_RANK", "1", false}};
    auto is = spank::framework_for_task(env_of(slurm_task()), islands, "");
    CHECK(value(is.set, "RANK") == "3");
    CHECK(value(is.set, "ROLE_RANK") == "3");
    CHECK(value(is.set, "GROUP_RANK") == "1");
    CHECK(value(is.set, "NODE_RANK") == "1");
    CHECK(value(is.set, "MASTER_ADDR") == "n1");  // no address resolved: the first node's name

    auto mine = slurm_task();
    mine["MASTER_PORT"] = "23456";
    mine["RANK"] = "7";
    auto u = spank::framework_for_task(env_of(mine), {}, "");
    CHECK(value(u.set, "MASTER_PORT") == "<unset>");
    CHECK(value(u.set, "RANK") == "<unset>");
    CHECK(value(u.set, "GPUTOPO_FRAMEWORK_SET").find("MASTER_PORT") == std::string::npos);

    auto bad = slurm_task();
    bad["SLURM_STEP_TASKS_PER_NODE"] = "2(x";
    auto b = spank::framework_for_task(env_of(bad), {}, "");
    CHECK(b.set.empty());
    CHECK_THAT(b.warning, Catch::Contains("2(x"));
}

TEST_CASE("MASTER_PORT: a port in use is named with the variable to set", "[framework]") {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 1) == 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    int port = ntohs(a.sin_port);
    std::string m = step::port_clash(port);
    CHECK_THAT(m, Catch::Contains(std::to_string(port)) && Catch::Contains("MASTER_PORT"));
    close(fd);
    CHECK(step::port_clash(port).empty());
}

TEST_CASE("MASTER_ADDR: NodeAddr when the first node's name does not resolve", "[framework]") {
    CHECK(step::parse_node_addr("NodeName=n1 Arch=x86_64 CoresPerSocket=2 NodeAddr=127.0.0.1 NodeHostName=localhost\n", "n1") ==
          "127.0.0.1");
    CHECK(step::parse_node_addr("NodeName=n10 NodeAddr=10.0.0.10\n", "n1").empty());
    CHECK(step::parse_node_addr("NodeName=n1 NodeAddr=$(rm)\n", "n1").empty());
    int calls = 0;
    auto run = [&](const std::vector<std::string>& argv, double) {
        ++calls;
        CHECK(argv.back() == "no-such-node.invalid");
        return std::make_pair(0, std::string("NodeName=no-such-node.invalid NodeAddr=10.1.2.3 State=IDLE\n"));
    };
    auto m = step::resolve_master_addr("no-such-node.invalid", run, 2);
    CHECK(m.addr == "10.1.2.3");
    CHECK(m.warning.empty());
    CHECK(calls == 1);
    auto none = step::resolve_master_addr("no-such-node.invalid", [](const std::vector<std::string>&, double) {
        return std::make_pair(1, std::string("Node no-such-node.invalid not found"));
    }, 2);
    CHECK(none.addr == "no-such-node.invalid");
    CHECK_THAT(none.warning, Catch::Contains("does not resolve") && Catch::Contains("MASTER_ADDR"));
    CHECK(step::resolve_master_addr("localhost", nullptr, 2).addr == "localhost");
}

TEST_CASE("island node rank: GROUP_RANK in island order, uniform and uneven task counts", "[framework]") {
    IslandMap m;
    parse_island_conf("Island=rackA Nodes=n[1,3]\nIsland=rackB Nodes=n[2,4]\n", "test.conf", m, nullptr);
    m.seal();
    Hostlist nodes = Hostlist::parse("n[1-4]");
    // Uneven counts (3,1,2,2): the order is n1 n3 n2 n4, whatever the counts.
    TaskCounts uneven = TaskCounts::parse("3,1,2,2");
    const char* names[] = {"n1", "n2", "n3", "n4"};
    const uint64_t want[] = {0, 2, 1, 3};
    for (int i = 0; i < 4; ++i) {
        IslandPlacement p = place_task(nodes, uneven, m, names[i], 0);
        CHECK(step::island_node_rank(nodes, uneven, m, names[i], p, 0) == want[i]);
    }
    TaskCounts even = TaskCounts::parse("2(x4)");
    for (int i = 0; i < 4; ++i)
        for (uint32_t local = 0; local < 2; ++local) {
            IslandPlacement p = place_task(nodes, even, m, names[i], local);
            uint64_t g = step::island_node_rank(nodes, even, m, names[i], p, local);
            CHECK(g == want[i]);
            CHECK(p.rank == g * 2 + local);  // torchrun's RANK = GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK
        }
}

TEST_CASE("MASTER_ADDR: NodeAddr from slurm.conf text, position for position", "[framework]") {
    const std::string conf = "# cluster\nNodeName=DEFAULT CPUs=8\n"
                             "NodeName=gpu[01-04] NodeAddr=10.0.0.[11-14] Port=17001 # racks\n"
                             "nodename=login NodeHostname=localhost nodeaddr=127.0.0.1\n"
                             "NodeName=x1 CPUs=2\n";
    CHECK(step::node_addr_from_conf(conf, "gpu03") == "10.0.0.13");
    CHECK(step::node_addr_from_conf(conf, "login") == "127.0.0.1");
    CHECK(step::node_addr_from_conf(conf, "x1").empty());     // no NodeAddr
    CHECK(step::node_addr_from_conf(conf, "gpu05").empty());  // not there
    CHECK(step::node_addr_from_conf("NodeName=a[1-2] NodeAddr=$(x)\n", "a1").empty());
    // No RPC when slurm.conf names the address (and the address resolves).
    int calls = 0;
    auto run = [&](const std::vector<std::string>&, double) {
        ++calls;
        return std::make_pair(1, std::string());
    };
    auto m = step::resolve_master_addr("gpu02.invalid", run, 2, "NodeName=gpu02.invalid NodeAddr=127.0.0.1\n");
    CHECK(m.addr == "127.0.0.1");
    CHECK(calls == 0);
}

// The one path from a parallel layout to a task's RANK (step/task_ranks.hpp), what the plugin
// (--gpu-topo=island,tp=..) and gputopo-launch --layout both call: against the placement, the
// launcher's outcome, and the framework variables the plugin derives from it.
TEST_CASE("layout rank: one path for plugin and launcher; RANK, GROUP_RANK follow it in the framework variables",
          "[layout][framework]") {
    char path[] = "/tmp/gputopo-layout-rank-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const std::string conf = "Island=leafA Nodes=n[1,3]\nIsland=leafB Nodes=n[2,4]\n";
    REQUIRE(write(fd, conf.data(), conf.size()) == static_cast<ssize_t>(conf.size()));
    close(fd);
    IslandMap map = load_islands(path);
    Hostlist nodes = Hostlist::parse("n[1-4]");
    auto no_env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };

    // Default order: every node holds one block; tp-pp-dp with 4 tasks a node: blocks split.
    for (const std::string layout : {"tp=2,pp=2", "tp=2,pp=2,order=tp-cp-ep-pp-dp"}) {
        INFO(layout);
        const uint32_t n = 4;
        LayoutPlacement p = place_layout(nodes, TaskCounts::uniform(4, n), map, FabricShape{}, ParallelLayout::parse(layout));
        std::vector<const char*> argv{"gputopo-launch", "--layout", layout.c_str(), "--islands", path, "--", "true"};
        launch::Options opt = launch::parse_options(int(argv.size()), argv.data(), no_env);
        std::set<std::string> ranks;
        int blocks = 0;
        for (uint64_t j = 0; j < 4; ++j)
            for (uint32_t t = 0; t < n; ++t) {
                std::map<std::string, std::string> vars{
                    {"SLURM_STEP_NODELIST", "n[1-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "4(x4)"},
                    {"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_STEP_NUM_NODES", "4"},
                    {"SLURM_PROCID", std::to_string(j * n + t)}, {"SLURM_LOCALID", std::to_string(t)},
                    {"SLURM_NODEID", std::to_string(j)}, {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "0"},
                    {"SLURM_CONF", "/nonexistent/slurm.conf"}};
                step::LayoutTaskRank r = step::layout_task_rank(map, nodes.nth(j), step::local_id_order(int(n)), int(t),
                                                                env_of(vars), {layout, "node", ""});
                REQUIRE(r.problem.empty());
                const std::string want = std::to_string(p.rank(j, t));
                CHECK(r.rank == want);
                CHECK(value(r.env, env::kRank) == want);
                const long block = block_of(p, j, n);
                blocks += block >= 0;
                CHECK(r.node_rank == (block >= 0 ? std::to_string(block) : std::string()));
                CHECK(value(r.env, env::kNodeRankIsland) == (block >= 0 ? std::to_string(block) : "<unset>"));
                // The launcher's --layout: the same call, the same answer.
                launch::IslandRankOutcome lo = launch::island_rank(opt, nodes.nth(j), int(t), env_of(vars));
                CHECK(lo.rank == want);
                CHECK(lo.node_rank == r.node_rank);
                // The plugin's framework variables follow it.
                spank::FrameworkTask f = spank::framework_for_task(env_of(vars), r.env, "");
                CHECK(value(f.set, "RANK") == want);
                CHECK(value(f.set, "ROLE_RANK") == want);
                const std::string group = block >= 0 ? std::to_string(block) : std::to_string(j);
                CHECK(value(f.set, "GROUP_RANK") == group);
                CHECK(value(f.set, "NODE_RANK") == group);
                ranks.insert(want);
            }
        CHECK(ranks.size() == 16);
        if (layout == "tp=2,pp=2") CHECK(blocks == 16);
        else CHECK(blocks < 16);  // tp-pp-dp: a node's two TP groups are pp neighbours, not consecutive ranks
    }

    // A layout that does not fit: no rank, the reason names the layout.
    std::map<std::string, std::string> odd{{"SLURM_STEP_NODELIST", "n[1-3]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"}};
    step::LayoutTaskRank bad = step::layout_task_rank(map, "n1", step::local_id_order(1), 0, env_of(odd),
                                                      {"tp=2,pp=2", "node", ""});
    CHECK(bad.rank.empty());
    CHECK(bad.env.empty());
    CHECK_THAT(bad.problem, Catch::Contains("layout tp=2,pp=2") && Catch::Contains("not a multiple of tp*cp*ep*pp = 4"));
    // A node not in the step.
    std::map<std::string, std::string> vars{{"SLURM_STEP_NODELIST", "n[1-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"}};
    CHECK_THAT(step::layout_task_rank(map, "n9", step::local_id_order(1), 0, env_of(vars), {"tp=2", "node", ""}).problem,
               Catch::Contains("'n9' is not in the step's node list"));
    unlink(path);
}

TEST_CASE("layout rank: --gpu-topo=island,tp=..,nvlink=.. words", "[layout]") {
    step::Options o = step::parse_gpu_topo("island,tp=8,pp=4,nvlink=island");
    CHECK(o.layout == "tp=8,pp=4");
    CHECK(o.nvlink_domain == "island");
    CHECK(step::to_string(o) == "island,tp=8,pp=4,nvlink=island");
    CHECK(step::parse_gpu_topo("island,tp=2").nvlink_domain.empty());
    CHECK(step::parse_gpu_topo("island,tp=2,nvlink=4").nvlink_domain == "4");
    CHECK_THROWS_WITH(step::parse_gpu_topo("island,nvlink=island"), Catch::Contains("needs a parallel layout"));
    CHECK_THROWS_WITH(step::parse_gpu_topo("island,tp=8,nvlink=rack"),
                      Catch::Contains("bad NVLink domain 'rack'") && Catch::Contains("--gpu-topo=island,tp=8,nvlink=rack"));
}
