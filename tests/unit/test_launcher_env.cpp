#include <catch2/catch.hpp>

#include <map>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/unit/fixtures.hpp"
#include "launcher/binding.hpp"
#include "launcher/framework_env.hpp"
#include "launcher/nccl_env.hpp"
#include "topo/core/errors.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo::launch;
using gputopo::EnvVar;

namespace {
Getenv env_of(std::map<std::string, std::string> m) {
    return [m](const std::string& k) -> std::optional<std::string> {
        auto it = m.find(k);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}
std::map<std::string, std::string> as_map(const std::vector<EnvVar>& v) {
    std::map<std::string, std::string> m;
    for (const auto& e : v) m[e.name] = e.value;
    return m;
}
}  // namespace

TEST_CASE("framework env from Slurm's task variables", "[launcher]") {
    auto get = env_of({{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_STEP_NUM_TASKS", "7"},
                       {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", "2"},
                       {"SLURM_STEP_NODELIST", "gpu[007-009,012]"}, {"SLURM_JOB_NODELIST", "other1"},
                       {"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "3"}});
    auto m = as_map(framework_env(get, {}));
    CHECK(m["RANK"] == "5");
    CHECK(m["LOCAL_RANK"] == "1");
    CHECK(m["WORLD_SIZE"] == "7");
    CHECK(m["LOCAL_WORLD_SIZE"] == "2");
    CHECK(m["MASTER_ADDR"] == "gpu007");
    int port = std::stoi(m["MASTER_PORT"]);
    CHECK(port >= 20000);
    CHECK(port <= 29999);
    // Every rank of the step computes the same port; another step another one.
    auto other_rank = env_of({{"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "3"}, {"SLURM_PROCID", "0"}});
    CHECK(as_map(framework_env(other_rank, {}))["MASTER_PORT"] == m["MASTER_PORT"]);
    for (const auto& v : framework_env(get, {})) CHECK(v.user_wins);
}

TEST_CASE("framework env: tasks per node, first host, port range", "[launcher]") {
    CHECK(tasks_on_node("4", 0) == 4);
    CHECK(tasks_on_node("2(x3),1", 0) == 2);
    CHECK(tasks_on_node("2(x3),1", 3) == 1);
    CHECK_THROWS_AS(tasks_on_node("2(x3),1", 4), gputopo::ParseError);
    CHECK_THROWS_AS(tasks_on_node("2(x", 0), gputopo::ParseError);
    CHECK(first_host("n[1-4]") == "n1");
    CHECK(first_host("login,n[1-4]") == "login");
    CHECK(first_host("rack[2-3]-node[01-04]") == "rack2-node01");
    std::set<int> ports;
    for (unsigned long long j = 1000; j < 1100; ++j) {
        int p = master_port(j, 0, 30000, 30009);
        CHECK(p >= 30000);
        CHECK(p <= 30009);
        ports.insert(p);
    }
    CHECK(ports.size() == 10);  // spreads over the whole range
    CHECK(master_port(77, 0, 20000, 29999) != master_port(77, 1, 20000, 29999));
}

TEST_CASE("NCCL_SOCKET_IFNAME: usable interfaces only, IPoIB first, exact match", "[launcher]") {
    std::vector<NetInterface> ifs = {
        {"lo", true, true, true},        {"eth0", true, false, true},   {"docker0", true, false, true},
        {"virbr0", true, false, true},   {"veth12ab", true, false, true}, {"ib0", true, false, true},
        {"eth1", false, false, true},    {"eth2", true, false, false},
    };
    CHECK(socket_ifname_value(ifs) == "=ib0,eth0");
    CHECK(socket_ifname_value({{"lo", true, true, true}}).empty());
    auto env = nccl_socket_env(ifs);
    REQUIRE(env.size() == 2);
    CHECK(env[0].name == "NCCL_SOCKET_IFNAME");
    CHECK(env[0].user_wins);
    // Gloo: plain names, only the first (several are round-robined and every
    // rank must list as many).
    CHECK(env[1].name == "GLOO_SOCKET_IFNAME");
    CHECK(env[1].value == "ib0");
    CHECK(env[1].user_wins);
    // This machine: never lo.
    std::string here = socket_ifname_value(list_interfaces());
    CHECK(here.find("=lo") == std::string::npos);
    CHECK(here.find(",lo") == std::string::npos);
}

TEST_CASE("binding without the plugin: inputs from Slurm's variables", "[launcher]") {
    auto shared = binding_inputs(env_of({{"SLURM_STEP_GPUS", "0,1,2,3"}, {"SLURM_LOCALID", "2"},
                                         {"SLURM_STEP_TASKS_PER_NODE", "4"}, {"SLURM_NODEID", "0"}}));
    CHECK(shared.gpus == std::vector<int>{0, 1, 2, 3});
    CHECK(shared.ntasks == 4);
    CHECK(shared.task == 2);
    CHECK_FALSE(shared.own_gpus_only);
    auto own = binding_inputs(env_of({{"CUDA_VISIBLE_DEVICES", "3"}, {"SLURM_GPUS_PER_TASK", "1"}, {"SLURM_LOCALID", "3"},
                                      {"SLURM_STEP_TASKS_PER_NODE", "4"}, {"SLURM_NODEID", "0"}}));
    CHECK(own.gpus == std::vector<int>{3});
    CHECK(own.ntasks == 1);
    CHECK(own.task == 0);
    CHECK_THROWS_AS(binding_inputs(env_of({{"SLURM_STEP_GPUS", "gpu0"}})), gputopo::ParseError);
    CHECK(binding_inputs(env_of({})).gpus.empty());
    CHECK(expand_topology_path("/t/%n-%h.xml", "n3", "host") == "/t/n3-host.xml");
}

TEST_CASE("binding without the plugin: the XE8640 fixture, 4 tasks on 4 GPUs", "[launcher]") {
    std::string file = gputopo_test::topology("hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml");
    gputopo::Node node = gputopo::load_topology_file(file);
    // The RDMA NIC names in the file, read independently.
    std::ifstream in(file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string xml = ss.str();
    std::set<std::string> nics;
    // (a plain scan: std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers)
    for (size_t p = xml.find("name=\"mlx5_"); p != std::string::npos; p = xml.find("name=\"mlx5_", p + 1)) {
        size_t start = p + 6, end = xml.find('"', start);
        nics.insert(xml.substr(start, end - start));
    }
    REQUIRE(nics.size() == 4);
    std::set<std::string> own_gpus;
    for (int t = 0; t < 4; ++t) {
        BindingInputs bi;
        bi.gpus = {0, 1, 2, 3};
        bi.ntasks = 4;
        bi.task = t;
        BindingOutcome b = binding_for(node, bi, "closest", std::nullopt);
        CHECK(b.bound);
        auto m = as_map(b.env);
        CHECK(m["GPUTOPO_MODE"] == "closest");
        // Shared view: all 4 GPUs visible, this task's own GPU at position LOCAL_RANK.
        std::vector<std::string> order;
        std::stringstream cv(m["CUDA_VISIBLE_DEVICES"]);
        std::string g;
        while (std::getline(cv, g, ',')) order.push_back(g);
        REQUIRE(order.size() == 4);
        CHECK(order[static_cast<size_t>(t)] == m["GPUTOPO_GPUS"]);
        own_gpus.insert(m["GPUTOPO_GPUS"]);
        // NCCL_IB_HCA: exact-match list of NICs that exist in the file, same on every task.
        REQUIRE(m["NCCL_IB_HCA"].size() > 1);
        CHECK(m["NCCL_IB_HCA"][0] == '=');
        std::stringstream hs(m["NCCL_IB_HCA"].substr(1));
        std::string h;
        while (std::getline(hs, h, ',')) CHECK(nics.count(h) == 1);
        CHECK(nics.count(m["GPUTOPO_NIC"].substr(0, m["GPUTOPO_NIC"].find(','))) == 1);
        // The fixture's CPUs are not this host's: affinity is not applied, and it says so.
        CHECK_FALSE(b.cpus.has_value());
        CHECK_THAT(b.note, Catch::Contains("not applied"));
    }
    CHECK(own_gpus.size() == 4);  // each task its own GPU
}

TEST_CASE("binding without the plugin: plugin present, mode none, unreadable topology", "[launcher]") {
    Options o;
    auto with_plugin = compute_binding(o, env_of({{"GPUTOPO_MODE", "island"}, {"SLURM_STEP_GPUS", "0"}}));
    CHECK_FALSE(with_plugin.bound);
    CHECK_THAT(with_plugin.note, Catch::Contains("plugin"));
    o.gpu_topo = "none";
    CHECK_FALSE(compute_binding(o, env_of({{"SLURM_STEP_GPUS", "0"}})).bound);
    o.gpu_topo = "closest";
    o.topology = "/nonexistent/%n.xml";
    auto bad = compute_binding(o, env_of({{"SLURM_STEP_GPUS", "0"}, {"SLURMD_NODENAME", "n9"}}));
    CHECK_FALSE(bad.bound);
    CHECK(bad.env.empty());
    CHECK_THAT(bad.note, Catch::Contains("running unbound") && Catch::Contains("/nonexistent/n9.xml"));
}
