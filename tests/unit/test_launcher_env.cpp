#include <catch2/catch.hpp>

#include <map>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/unit/fixtures.hpp"
#include "launcher/env/binding.hpp"
#include "launcher/env/framework_env.hpp"
#include "launcher/env/nccl_env.hpp"
#include "launcher/ranks/rank_sources.hpp"
#include "topo/core/errors.hpp"
#include "topo/sources/topology_loader.hpp"
#include "topo/core/host.hpp"
#include "topo/plan/omp_env.hpp"

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
    // Job id space: steps 0-8 of 1,000 consecutive jobs never share a port (the old hash: ~2 % did).
    std::set<int> seen;
    for (unsigned long long j = 5000; j < 6000; ++j)
        for (unsigned long long st = 0; st < 9; ++st) seen.insert(master_port(j, st, 20000, 29999));
    CHECK(seen.size() == 9000);
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

TEST_CASE("binding without the plugin: where the task sits, from Slurm's variables", "[launcher]") {
    TaskPlace p = task_place(env_of({{"SLURM_LOCALID", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "3,4(x2)"},
                                     {"SLURM_NODEID", "1"}, {"SLURMD_NODENAME", "gpu7"}}), "host");
    CHECK(p.local_id == 2);
    CHECK(p.local_tasks == 4);
    CHECK(p.node_name == "gpu7");
    p = task_place(env_of({{"SLURM_NODEID", "1"}, {"SLURM_STEP_NODELIST", "a,b"}}), "host");
    CHECK(p.node_name == "b");
    CHECK(p.local_tasks == 1);
    CHECK_THROWS_AS(task_place(env_of({{"SLURM_LOCALID", "x"}}), "h"), gputopo::ParseError);
}

TEST_CASE("binding without the plugin: task counts from the environment are range-checked and capped (issue 33, finding 12)",
          "[launcher]") {
    auto problem = [](std::map<std::string, std::string> m) {
        try {
            TaskPlace p = task_place(env_of(m), "h");
            return std::string("no error, ") + std::to_string(p.local_tasks) + " local tasks";
        } catch (const gputopo::ParseError& e) {
            return std::string(e.what());
        }
    };
    // 10,000,000 tasks on the node used to size the step-GPU exchange (5.2 GB); 2147483647: bad_alloc.
    for (const char* big : {"10000000", "2147483647", "99999999999", "18446744073709551617"}) {
        INFO(big);
        CHECK_THAT(problem({{"SLURM_STEP_TASKS_PER_NODE", big}, {"SLURM_NODEID", "0"}}),
                   Catch::Contains("SLURM_STEP_TASKS_PER_NODE"));
        CHECK_THAT(problem({{"SLURM_LOCALID", big}}), Catch::Contains("SLURM_LOCALID='") &&
                                                          Catch::Contains("from 0 to " + std::to_string(kMaxLocalTasks - 1)));
    }
    for (const char* big : {"100000000", "99999999999", "18446744073709551617"})
        CHECK_THAT(problem({{"SLURM_NODEID", big}, {"SLURM_TASKS_PER_NODE", "4"}}),
                   Catch::Contains(std::string("SLURM_NODEID='") + big + "': expected a whole number from 0 to 99999999"));
    CHECK_THAT(problem({{"SLURM_TASKS_PER_NODE", "4097"}, {"SLURM_NODEID", "0"}}),
               Catch::Contains("SLURM_TASKS_PER_NODE='4097': 4097 tasks") && Catch::Contains("at most 4096"));
    CHECK_THAT(problem({{"SLURM_STEP_TASKS_PER_NODE", "2(x3)"}, {"SLURM_NODEID", "3"}}),
               Catch::Contains("SLURM_STEP_TASKS_PER_NODE='2(x3)' does not reach node index 3"));
    CHECK(problem({{"SLURM_STEP_TASKS_PER_NODE", "4096"}, {"SLURM_NODEID", "0"}, {"SLURM_LOCALID", "4095"}}) ==
          "no error, 4096 local tasks");
    // A control character in the value is shown escaped, never as a new line.
    CHECK_THAT(problem({{"SLURM_LOCALID", "1\nforged"}}), Catch::Contains("1\\nforged"));
}

TEST_CASE("binding without the plugin: the step's environment from a narrowed task", "[launcher]") {
    // Absolute numbering: task 1 of --gpus-per-task=2 on GPUs 4-7.
    auto abs = step_environment(env_of({{"SLURM_STEP_GPUS", "6,7"}, {"CUDA_VISIBLE_DEVICES", "6,7"}, {"X", "y"}}),
                                {4, 5, 6, 7});
    CHECK(abs("SLURM_STEP_GPUS") == std::optional<std::string>("4,5,6,7"));
    CHECK(abs("CUDA_VISIBLE_DEVICES") == std::optional<std::string>("4,5,6,7"));
    CHECK(abs("X") == std::optional<std::string>("y"));
    CHECK_FALSE(abs("ROCR_VISIBLE_DEVICES"));
    // Relative numbering (ConstrainDevices): positions in the step's set.
    auto rel = step_environment(env_of({{"SLURM_STEP_GPUS", "6,7"}, {"CUDA_VISIBLE_DEVICES", "2,3"}}), {4, 5, 6, 7});
    CHECK(rel("CUDA_VISIBLE_DEVICES") == std::optional<std::string>("0,1,2,3"));
    // UUIDs stay as Slurm gave them.
    auto uuid = step_environment(env_of({{"SLURM_STEP_GPUS", "1"}, {"CUDA_VISIBLE_DEVICES", "MIG-abc"}}), {0, 1});
    CHECK(uuid("CUDA_VISIBLE_DEVICES") == std::optional<std::string>("MIG-abc"));
    CHECK(gpus_narrowed(std::string("gpu:per_task:1")));
    CHECK(gpus_narrowed(std::string("gres/gpu:map_gpu:3,2")));
    CHECK_FALSE(gpus_narrowed(std::nullopt));
}

TEST_CASE("binding without the plugin: XE8640, Slurm's relative numbering kept (2,3 seen as 0,1)", "[launcher]") {
    gputopo::Node node = gputopo::load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    auto env = env_of({{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}, {"SLURM_LOCALID", "0"},
                       {"SLURM_STEP_TASKS_PER_NODE", "2"}, {"SLURM_NODEID", "0"}, {"SLURMD_NODENAME", "n3"}});
    gputopo::step::Options o = default_gpu_topo();
    for (int t = 0; t < 2; ++t) {
        auto e = [env, t](const std::string& n) -> std::optional<std::string> {
            if (n == "SLURM_LOCALID") return std::to_string(t);
            return env(n);
        };
        auto a = binding_for(node, o, e, read_task_place(e, gputopo::host_name()), false, std::nullopt,
                             gputopo::CpuSet::range(0, 3), gputopo::CpuSet::range(0, 3));
        auto m = as_map(a.set);
        // The devices this step sees are numbered 0 and 1; GPU indices 2 and 3 are in GPUTOPO_GPUS.
        CHECK((m["CUDA_VISIBLE_DEVICES"] == "0,1" || m["CUDA_VISIBLE_DEVICES"] == "1,0"));
        CHECK((m["GPUTOPO_GPUS"] == "2" || m["GPUTOPO_GPUS"] == "3"));
        CHECK_FALSE(a.apply_affinity);  // the fixture's CPUs are not this host's
    }
}

TEST_CASE("binding without the plugin: plugin present, mode none, unreadable topology", "[launcher]") {
    Options o;
    // The rank's place, read once as run.cpp does, then the binding.
    auto bind_task = [&o](const Getenv& e, NodeOnce& node) {
        return gputopo::launch::compute_binding(o, e, read_task_place(e, gputopo::host_name()), node);
    };
    gputopo::step::NodeSource missing;
    missing.topology = "/nonexistent/%n.xml";
    NodeOnce none(missing, "n9", "h");
    auto with_plugin = bind_task(env_of({{"GPUTOPO_MODE", "island"}, {"SLURM_STEP_GPUS", "0"}}), none);
    CHECK_FALSE(with_plugin.bound);
    CHECK_FALSE(with_plugin.failed);  // skipped: the plugin bound it, nothing failed
    CHECK_THAT(with_plugin.note, Catch::Contains("plugin"));
    o.gpu_topo = gputopo::step::parse_gpu_topo("none");
    CHECK_FALSE(bind_task(env_of({{"SLURM_STEP_GPUS", "0"}}), none).bound);
    o.gpu_topo = default_gpu_topo();
    CHECK_THAT(bind_task(env_of({{"SLURM_STEP_GPUS", "0"}}), none).note, Catch::Contains("not in a Slurm job step"));
    auto bad = bind_task(env_of({{"SLURM_STEP_GPUS", "0"}, {"SLURMD_NODENAME", "n9"}, {"SLURM_STEP_ID", "0"}}), none);
    CHECK_FALSE(bad.bound);
    CHECK(bad.failed);  // what run.cpp warns about and `strict` fails on
    CHECK(bad.action.set.empty());
    CHECK_THAT(bad.note, Catch::Contains("running unbound") && Catch::Contains("/nonexistent/n9.xml"));
    // A node name that would leave the directory is refused, not expanded.
    gputopo::step::NodeSource pattern;
    pattern.topology = "/t/%n.xml";
    NodeOnce evil(pattern, "../etc/x", "h");
    CHECK_THAT(bind_task(env_of({{"SLURM_STEP_GPUS", "0"}, {"SLURM_STEP_ID", "0"}}), evil).note,
               Catch::Contains("not a plain name"));
}

TEST_CASE("torchrun's workers: the Slurm task's CPUs, -c shared, the plugin's OpenMP values not the user's", "[launcher][torchrun]") {
    gputopo::Node node = gputopo::load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    const gputopo::CpuSet task = gputopo::CpuSet::parse_list("0-7");
    // What the plugin set for the whole task with -c 8 (one place per CPU).
    std::map<std::string, std::string> m = {{"GPUTOPO_MODE", "closest"}, {"GPUTOPO_CPUS", "0-7"}, {"SLURM_CPUS_PER_TASK", "8"},
                                            {"GROUP_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}};
    for (const auto& v : gputopo::omp_env(node, task, true)) m[v.name] = v.value;
    WorkerView w = worker_view(env_of(m), node, 2);
    REQUIRE(w.task_cpus);
    CHECK(w.task_cpus->to_list() == "0-7");
    CHECK(w.env("SLURM_CPUS_PER_TASK") == std::optional<std::string>("4"));
    CHECK_FALSE(w.env("OMP_PLACES"));
    CHECK_FALSE(w.env("OMP_NUM_THREADS"));
    CHECK_FALSE(w.env("OMP_PROC_BIND"));
    CHECK(w.hidden.size() == 3);
    CHECK(w.env("LOCAL_RANK") == std::optional<std::string>("1"));

    // The user's own OpenMP values stay theirs.
    auto user = m;
    user["OMP_PLACES"] = "cores";
    user["OMP_NUM_THREADS"] = "3";
    w = worker_view(env_of(user), node, 2);
    CHECK(w.env("OMP_PLACES") == std::optional<std::string>("cores"));
    CHECK(w.env("OMP_NUM_THREADS") == std::optional<std::string>("3"));
    CHECK(w.hidden.empty());

    // Not torchrun (mpirun's ranks in a batch script are Slurm's tasks by count): -c is each one's.
    auto mpi = m;
    mpi.erase("GROUP_RANK");
    CHECK(worker_view(env_of(mpi), node, 2).env("SLURM_CPUS_PER_TASK") == std::optional<std::string>("8"));
    // More workers than CPUs: at least one each.
    CHECK(worker_view(env_of(m), node, 16).env("SLURM_CPUS_PER_TASK") == std::optional<std::string>("1"));

    // Without the plugin's binding: the process's affinity stands, nothing hidden.
    auto bare = m;
    bare.erase("GPUTOPO_MODE");
    w = worker_view(env_of(bare), node, 2);
    CHECK_FALSE(w.task_cpus);
    CHECK(w.env("OMP_PLACES") == std::optional<std::string>(m["OMP_PLACES"]));
    // A GPUTOPO_CPUS that is not a CPU list: the affinity stands.
    auto junk = m;
    junk["GPUTOPO_CPUS"] = "zz";
    CHECK_FALSE(worker_view(env_of(junk), node, 2).task_cpus);
}
