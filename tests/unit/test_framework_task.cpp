// The plugin's framework variables (spank/framework_task.hpp): the launcher's
// own computation, in island order when the task has island variables, never
// over a user's value; MASTER_PORT / MASTER_ADDR helpers.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "spank/framework_task.hpp"
#include "step/framework_env.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/step_islands.hpp"

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
        CHECK(island_node_rank(nodes, uneven, m, names[i], p, 0) == want[i]);
    }
    TaskCounts even = TaskCounts::parse("2(x4)");
    for (int i = 0; i < 4; ++i)
        for (uint32_t local = 0; local < 2; ++local) {
            IslandPlacement p = place_task(nodes, even, m, names[i], local);
            uint64_t g = island_node_rank(nodes, even, m, names[i], p, local);
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
