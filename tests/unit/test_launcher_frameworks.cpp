// What the frameworks and the other launchers/schedulers read, checked
// against their own rank-reading code (cited by file and function; the
// framework sources were read at the commits named below).
//
//   pytorch   torch/distributed/elastic/agent/server/local_elastic_agent.py
//             (commit 001077cb), LocalElasticAgent._start_workers: worker_env
//             = RANK, GROUP_RANK, ROLE_RANK, ROLE_NAME, LOCAL_WORLD_SIZE,
//             WORLD_SIZE, GROUP_WORLD_SIZE, ROLE_WORLD_SIZE, MASTER_ADDR,
//             MASTER_PORT, TORCHELASTIC_RESTART_COUNT,
//             TORCHELASTIC_MAX_RESTARTS, TORCHELASTIC_RUN_ID, + LOCAL_RANK
//             (_set_local_rank_env).
//             torch/distributed/elastic/multiprocessing/errors/error_handler.py
//             (commit 102a341a), ErrorHandler.record_exception: the error file.
//   Lightning src/lightning/fabric/plugins/environments/torchelastic.py
//             (commit 062199a2): global_rank = RANK, local_rank = LOCAL_RANK,
//             node_rank = GROUP_RANK (default 0), world_size = WORLD_SIZE,
//             validate_settings: devices * num_nodes == WORLD_SIZE.
//   Composer  composer/utils/dist.py: get_node_rank() = NODE_RANK,
//             get_local_world_size() = LOCAL_WORLD_SIZE.
//   JAX       jax/_src/clusters/slurm_cluster.py (commit 01f4709d): process id
//             = SLURM_PROCID (line 61), local process id = SLURM_LOCALID (line
//             65), coordinator = first host of SLURM_STEP_NODELIST (lines
//             37-52); cluster.py auto_detect_unset_distributed_params:
//             local_device_ids = [SLURM_LOCALID]; distributed.py
//             State.initialize: JAX_COORDINATOR_ADDRESS wins over the cluster's.
//   NCCL      src/misc/param.cc initEnvFunc: NCCL_CONF_FILE else
//             ~/.nccl.conf, then /etc/nccl.conf; the environment wins.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "launcher/failure/classify.hpp"
#include "launcher/failure/error_file.hpp"
#include "launcher/env/framework_env.hpp"
#include "launcher/ranks/island_rank.hpp"
#include "launcher/env/nccl_env.hpp"
#include "launcher/ranks/pod.hpp"
#include "launcher/ranks/rank_sources.hpp"
#include "launcher/requeue/requeue.hpp"
#include "launcher/options/options.hpp"
#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo::launch;
using gputopo::EnvVar;

namespace {

using Env = std::map<std::string, std::string>;

Getenv env_of(Env m) {
    return [m](const std::string& k) -> std::optional<std::string> {
        auto it = m.find(k);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}

// The program's environment: `start` plus what the launcher sets (keeping
// the user's values, as gputopo-launch does).
Env child_env(const Env& start, const std::vector<EnvVar>& wanted) {
    Env out = start;
    auto r = gputopo::keep_user_values(wanted, env_of(start));
    for (const auto& v : r.set) out[v.name] = v.value;
    return out;
}

// Lightning's TorchElasticEnvironment and Composer's dist, as they read the
// environment (see the header); throws like they do on a missing variable.
struct FrameworkView {
    int global_rank, local_rank, node_rank, world_size, composer_node_rank, local_world_size;
};
FrameworkView read_like_frameworks(const Env& e) {
    auto need = [&](const char* k) {
        auto it = e.find(k);
        if (it == e.end()) throw std::runtime_error(std::string("KeyError: ") + k);
        return std::stoi(it->second);
    };
    auto opt = [&](const char* k, int d) { return e.count(k) ? std::stoi(e.at(k)) : d; };
    // torch.distributed.is_torchelastic_launched(): TORCHELASTIC_RUN_ID present.
    if (!e.count("TORCHELASTIC_RUN_ID")) throw std::runtime_error("not torchelastic-launched");
    return {need("RANK"), need("LOCAL_RANK"), opt("GROUP_RANK", 0), need("WORLD_SIZE"), need("NODE_RANK"),
            need("LOCAL_WORLD_SIZE")};
}

std::string temp_dir() {
    char tmpl[] = "/tmp/gputopo-fw-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    return tmpl;
}

void write_file(const std::string& path, const std::string& text) {
    std::string dir = path.substr(0, path.rfind('/'));
    std::string cmd = "mkdir -p '" + dir + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ofstream(path) << text;
}

void remove_tree(const std::string& dir) {
    std::string cmd = "rm -rf '" + dir + "'";
    CHECK(std::system(cmd.c_str()) == 0);
}

std::string fake_uuid(int i) { return "GPU-8f6a0c1e-aaaa-bbbb-cccc-00000000000" + std::to_string(i); }

// A node with `n` NVIDIA GPUs (and a NIC between them in PCI order) as sysfs
// and the driver show it: /sys/bus/pci/devices/BUS/{vendor,class},
// /proc/driver/nvidia/gpus/BUS/information.
void fake_node_gpus(const std::string& root, int n) {
    write_file(root + "/sys/bus/pci/devices/0000:05:00.0/vendor", "0x15b3\n");
    write_file(root + "/sys/bus/pci/devices/0000:05:00.0/class", "0x020700\n");
    for (int i = 0; i < n; ++i) {
        char bus[32];
        std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x10 + 0x10 * i);
        write_file(root + "/sys/bus/pci/devices/" + bus + "/vendor", "0x10de\n");
        write_file(root + "/sys/bus/pci/devices/" + bus + "/class", "0x030200\n");
        write_file(root + "/proc/driver/nvidia/gpus/" + bus + "/information",
                   "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t " + fake_uuid(i) + "\nBus Location: \t " + bus + "\n");
    }
}

// torch's json.dump of ErrorHandler.record_exception's dict.
std::string torch_error_file(const std::string& message, const std::string& callstack) {
    auto esc = [](const std::string& s) {
        std::string o;
        for (char c : s) {
            if (c == '"' || c == '\\') o += '\\', o += c;
            else if (c == '\n') o += "\\n";
            else o += c;
        }
        return o;
    };
    return "{\"message\": {\"message\": \"" + esc(message) + "\", \"extraInfo\": {\"py_callstack\": \"" + esc(callstack) +
           "\", \"timestamp\": \"1764576000\"}}}";
}

}  // namespace

TEST_CASE("torchrun-complete environment under srun: what Lightning and Composer read", "[launcher][frameworks]") {
    // Rank 5 of 8 on the second of two nodes (4 tasks each), a requeued job.
    Env slurm = {{"SLURM_JOB_ID", "777"},          {"SLURM_STEP_ID", "0"},           {"SLURM_PROCID", "5"},
                 {"SLURM_LOCALID", "1"},           {"SLURM_NODEID", "1"},            {"SLURM_STEP_NUM_TASKS", "8"},
                 {"SLURM_STEP_NUM_NODES", "2"},    {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
                 {"SLURM_STEP_NODELIST", "gpu[01-02]"}, {"SLURM_RESTART_COUNT", "2"}};
    FrameworkInputs in;
    in.max_restarts = 3;
    in.error_file = "/tmp/e.777.5.json";
    Env e = child_env(slurm, framework_env(env_of(slurm), in));
    // torchrun's own names and meanings (local_elastic_agent.py _start_workers).
    CHECK(e["GROUP_RANK"] == slurm["SLURM_NODEID"]);
    CHECK(e["GROUP_WORLD_SIZE"] == slurm["SLURM_STEP_NUM_NODES"]);
    CHECK(e["ROLE_RANK"] == e["RANK"]);
    CHECK(e["ROLE_WORLD_SIZE"] == e["WORLD_SIZE"]);
    CHECK(e["ROLE_NAME"] == "default");
    CHECK(e["TORCHELASTIC_RESTART_COUNT"] == slurm["SLURM_RESTART_COUNT"]);
    CHECK(e["TORCHELASTIC_MAX_RESTARTS"] == "3");
    CHECK(e["TORCHELASTIC_RUN_ID"] == slurm["SLURM_JOB_ID"]);
    CHECK(e["TORCHELASTIC_ERROR_FILE"] == in.error_file);
    FrameworkView v = read_like_frameworks(e);
    CHECK(v.global_rank == 5);
    CHECK(v.local_rank == 1);
    CHECK(v.node_rank == 1);
    CHECK(v.composer_node_rank == 1);
    CHECK(v.world_size == 8);
    // Lightning's validate_settings(devices=4, num_nodes=2).
    CHECK(v.local_world_size * std::stoi(e["GROUP_WORLD_SIZE"]) == v.world_size);
    // A first attempt (no SLURM_RESTART_COUNT) is restart 0.
    Env first = slurm;
    first.erase("SLURM_RESTART_COUNT");
    CHECK(child_env(first, framework_env(env_of(first), in))["TORCHELASTIC_RESTART_COUNT"] == "0");
    // Island order moves ROLE_RANK with RANK.
    auto wanted = framework_env(env_of(slurm), in);
    apply_island_rank(wanted, "6");
    Env island = child_env(slurm, wanted);
    CHECK(island["RANK"] == "6");
    CHECK(island["ROLE_RANK"] == "6");
}

TEST_CASE("rank sources: torchrun, Open MPI, PyTorchJob, Indexed Job / JobSet, none", "[launcher][frameworks]") {
    SECTION("torchrun wins over the agent's SLURM_PROCID (srun torchrun ...)") {
        Env e = {{"SLURM_PROCID", "1"}, {"SLURM_JOB_ID", "9"}, {"RANK", "13"}, {"LOCAL_RANK", "5"},
                 {"WORLD_SIZE", "16"}, {"LOCAL_WORLD_SIZE", "8"}, {"GROUP_RANK", "1"}, {"GROUP_WORLD_SIZE", "2"}};
        RankSource s = detect_rank_source(env_of(e));
        CHECK(s.name == "torchrun");
        Getenv g = with_rank_source(env_of(e), s);
        CHECK(g("SLURM_PROCID") == "13");
        CHECK(g("SLURM_LOCALID") == "5");
        CHECK(g("SLURM_NODEID") == "1");
        CHECK(g("SLURM_STEP_TASKS_PER_NODE") == "8(x2)");
        CHECK(tasks_on_node(*g("SLURM_STEP_TASKS_PER_NODE"), 1) == 8);
        CHECK(g("SLURM_JOB_ID") == "9");  // the rest is the real environment
        e["RANK"] = "16";
        CHECK_THROWS_WITH(detect_rank_source(env_of(e)), Catch::Contains("RANK=16 is not below WORLD_SIZE=16"));
    }
    SECTION("Open MPI (mpirun, the MPI Operator)") {
        Env e = {{"OMPI_COMM_WORLD_RANK", "6"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"OMPI_COMM_WORLD_NODE_RANK", "1"}};
        RankSource s = detect_rank_source(env_of(e));
        CHECK(s.name == "openmpi");
        Env c = child_env(e, framework_env(with_rank_source(env_of(e), s), {}));
        CHECK(c["RANK"] == "6");
        CHECK(c["LOCAL_RANK"] == "2");
        CHECK(c["WORLD_SIZE"] == "8");
        CHECK(c["LOCAL_WORLD_SIZE"] == "4");
        CHECK(c["NODE_RANK"] == "1");
        e.erase("OMPI_COMM_WORLD_NODE_RANK");  // older Open MPI: by-slot rank / local size
        CHECK(with_rank_source(env_of(e), detect_rank_source(env_of(e)))("SLURM_NODEID") == "1");
        e["OMPI_COMM_WORLD_LOCAL_RANK"] = "x";
        CHECK_THROWS_WITH(detect_rank_source(env_of(e)), Catch::Contains("OMPI_COMM_WORLD_LOCAL_RANK='x'"));
    }
    SECTION("Kubeflow PyTorchJob / Trainer: PET_*") {
        Env e = {{"PET_NNODES", "4"}, {"PET_NODE_RANK", "2"}, {"PET_NPROC_PER_NODE", "1"},
                 {"PET_MASTER_ADDR", "job-master-0"}, {"PET_MASTER_PORT", "23456"}};
        RankSource s = detect_rank_source(env_of(e));
        CHECK(s.name == "pytorchjob");
        FrameworkInputs fi;
        fi.master_addr = s.master_addr;
        fi.master_port = s.master_port;
        Env c = child_env(e, framework_env(with_rank_source(env_of(e), s), fi));
        CHECK(c["RANK"] == "2");
        CHECK(c["WORLD_SIZE"] == "4");
        CHECK(c["LOCAL_RANK"] == "0");
        CHECK(c["GROUP_RANK"] == "2");
        CHECK(c["MASTER_ADDR"] == "job-master-0");
        CHECK(c["MASTER_PORT"] == "23456");
        e["PET_NPROC_PER_NODE"] = "8";
        CHECK_THROWS_WITH(detect_rank_source(env_of(e)), Catch::Contains("run it under torchrun in the pod"));
    }
    SECTION("JobSet / Indexed Job: JOB_COMPLETION_INDEX, the JobSet's headless service") {
        Env e = {{"JOB_COMPLETION_INDEX", "1"}, {"JOB_INDEX", "1"}, {"GPUTOPO_PODS_PER_JOB", "2"},
                 {"GPUTOPO_NNODES", "4"}, {"JOBSET_NAME", "train"}, {"REPLICATED_JOB_NAME", "workers"},
                 {"MASTER_PORT", "29500"}};
        RankSource s = detect_rank_source(env_of(e));
        CHECK(s.name == "indexed-job");
        CHECK(s.master_addr == "train-workers-0-0.train");
        CHECK(with_rank_source(env_of(e), s)("SLURM_PROCID") == "3");  // job 1 * 2 pods + index 1
        CHECK(s.master_port == "29500");
        e["GPUTOPO_NNODES"] = "3";
        CHECK_THROWS_WITH(detect_rank_source(env_of(e)), Catch::Contains("is not below GPUTOPO_NNODES=3"));
    }
    SECTION("nothing: rank 0 of 1, nothing overlaid") {
        RankSource s = detect_rank_source(env_of({}));
        CHECK(s.name == "none");
        CHECK(s.vars.empty());
        CHECK(detect_rank_source(env_of({{"SLURM_PROCID", "3"}})).name == "slurm");
    }
}

TEST_CASE("pods: cgroup cpuset and the device plugin's GPUs from a fake root", "[launcher][frameworks]") {
    std::string root = temp_dir();
    CHECK_FALSE(cgroup_cpuset(root));
    write_file(root + "/sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-63\n");  // cgroup v1
    CHECK(cgroup_cpuset(root)->to_list() == "0-63");
    write_file(root + "/sys/fs/cgroup/cpuset.cpus.effective", "0-127\n");  // v2, the container's namespace
    CHECK(cgroup_cpuset(root)->to_list() == "0-127");
    // v2 without a cgroup namespace: the process's own cgroup (the CPU manager's exclusive CPUs).
    std::string pod = "/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope";
    write_file(root + "/proc/self/cgroup", "0::" + pod + "\n");
    write_file(root + "/sys/fs/cgroup" + pod + "/cpuset.cpus.effective", "16-23,80-87\n");
    CHECK(cgroup_cpuset(root)->to_list() == "16-23,80-87");

    // GPUs: UUIDs from the device plugin, renumbered from 0 in the container.
    PodGpus g = pod_gpus(env_of({{"NVIDIA_VISIBLE_DEVICES", "GPU-8f6a0c1e-aaaa-bbbb-cccc-000000000001,"
                                                            "GPU-8f6a0c1e-aaaa-bbbb-cccc-000000000005"}}),
                         root);
    CHECK(g.gpus == std::vector<int>{0, 1});
    CHECK(g.from == "NVIDIA_VISIBLE_DEVICES");
    CHECK_THAT(g.note, Catch::Contains("the container's numbering (0..1) stands in"));  // no driver files here
    CHECK(pod_gpus(env_of({{"NVIDIA_VISIBLE_DEVICES", "void"}}), root).gpus.empty());
    CHECK(pod_gpus(env_of({}), root).gpus.empty());
    for (const char* bus : {"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0"})
        write_file(root + "/proc/driver/nvidia/gpus/" + bus + "/information", "Model: H100\n");
    CHECK(pod_gpus(env_of({{"NVIDIA_VISIBLE_DEVICES", "all"}}), root).gpus == std::vector<int>{0, 1, 2});
    CHECK(pod_gpus(env_of({}), root).gpus == std::vector<int>{0, 1, 2});
    remove_tree(root);

    // The device plugin's UUIDs placed among the node's GPUs: the driver's
    // "GPU UUID:" line gives the bus, the bus's place among the NVIDIA GPUs
    // in PCI order the node's index; CUDA in the container numbers them 0..k-1.
    root = temp_dir();
    fake_node_gpus(root, 8);
    g = pod_gpus(env_of({{"NVIDIA_VISIBLE_DEVICES", fake_uuid(5) + "," + fake_uuid(4)}}), root);
    CHECK(g.note.empty());
    CHECK(g.gpus == std::vector<int>{4, 5});
    CHECK(g.container == std::vector<int>{0, 1});
    g = pod_gpus(env_of({{"NVIDIA_VISIBLE_DEVICES", "6,2"}}), root);  // indices are the node's already
    CHECK(g.gpus == std::vector<int>{2, 6});
    CHECK(pod_gpus(env_of({{"NVIDIA_VISIBLE_DEVICES", fake_uuid(0)}}), root).container.empty());  // 0 is 0
    remove_tree(root);
}

TEST_CASE("TORCHELASTIC_ERROR_FILE: torch's format, classified", "[launcher][frameworks]") {
    CHECK(error_file_path("/l/err.%j.%r.%R.json", "55", 3, 1) == "/l/err.55.3.1.json");
    CHECK(error_file_path("/l/err.%j.%r.json", "", 3, 0) == "/l/err.nojob.3.json");
    CHECK(error_file_path("none", "55", 3, 0).empty());

    std::string cuda_msg = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
                           "CUDA kernel errors might be asynchronously reported";
    ErrorRecord r = parse_error_record(torch_error_file(cuda_msg, "Traceback (most recent call last):\n  File \"t.py\""));
    REQUIRE(r.found);
    CHECK(r.message == cuda_msg);
    CHECK(r.timestamp == "1764576000");
    CHECK(r.callstack.find("Traceback") == 0);

    ChildEnd end;
    end.exit_code = 1;
    end.error_record = r.message + "\n" + r.callstack;
    Classification c = classify(end, {});
    CHECK(c.cls == FailureClass::GpuFault);
    CHECK(c.local);
    CHECK_THAT(c.evidence, Catch::Contains("error file: RuntimeError: CUDA error"));

    end.error_record = parse_error_record(torch_error_file(
        "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version 2.21.5", "")).message;
    c = classify(end, {});
    CHECK(c.cls == FailureClass::GpuFault);
    CHECK_FALSE(c.local);  // may be a peer's doing: retried without excluding this node

    end.error_record = "DistBackendError: NCCL error in: x.cpp:1, remote process exited or there was a network error";
    CHECK(classify(end, {}).cls == FailureClass::PeerLost);  // a peer exited: its own cause decides

    end.error_record = parse_error_record(torch_error_file("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "")).message;
    CHECK(classify(end, {}).cls == FailureClass::Failed);  // the program's own doing

    // The agent's rewritten form: "message" a string; errorCode added.
    CHECK(parse_error_record("{\"message\": \"ValueError: bad\"}").message == "ValueError: bad");
    CHECK(parse_error_record("{\"message\": {\"message\": \"E: x\", \"errorCode\": 139, \"extraInfo\": {}}}").error_code == 139);
    CHECK_FALSE(parse_error_record("not json").found);
    CHECK_FALSE(parse_error_record("not json").problem.empty());
    CHECK_FALSE(parse_error_record("{\"other\": 1}").found);
    CHECK_FALSE(read_error_record("/nonexistent/gputopo-error.json").found);
    CHECK(read_error_record("/nonexistent/gputopo-error.json").problem.empty());
}

TEST_CASE("nccl.conf values are the user's: temp HOME, NCCL_CONF_FILE, /etc under a root", "[launcher][frameworks]") {
    std::string home = temp_dir(), root = temp_dir();
    write_file(home + "/.nccl.conf", "# site tuning\nNCCL_SOCKET_IFNAME=eth7\nNCCL_DEBUG=INFO\nnot a setting\n");
    write_file(root + "/etc/nccl.conf", "NCCL_IB_HCA=mlx5_9\nNCCL_SOCKET_IFNAME=eth8\n");
    Env e = {{"HOME", home}};
    auto conf = nccl_conf_values(env_of(e), root);
    CHECK(conf["NCCL_SOCKET_IFNAME"].value == "eth7");  // ~/.nccl.conf before /etc/nccl.conf
    CHECK(conf["NCCL_IB_HCA"].value == "mlx5_9");
    CHECK(conf.count("not a setting") == 0);
    std::vector<EnvVar> wanted = {{"NCCL_SOCKET_IFNAME", "=ib0", true}, {"NCCL_IB_HCA", "=mlx5_0", true},
                                  {"UCX_NET_DEVICES", "mlx5_0:1", true}};
    auto r = gputopo::keep_user_values(wanted, with_nccl_conf(env_of(e), conf));
    REQUIRE(r.set.size() == 1);
    CHECK(r.set[0].name == "UCX_NET_DEVICES");
    REQUIRE(r.kept.size() == 2);
    // NCCL_CONF_FILE replaces ~/.nccl.conf (not /etc/nccl.conf).
    write_file(home + "/other.conf", "NCCL_SOCKET_IFNAME=eth9\n");
    e["NCCL_CONF_FILE"] = home + "/other.conf";
    conf = nccl_conf_values(env_of(e), root);
    CHECK(conf["NCCL_SOCKET_IFNAME"].value == "eth9");
    CHECK(conf.count("NCCL_DEBUG") == 0);
    CHECK(conf["NCCL_IB_HCA"].value == "mlx5_9");
    remove_tree(home);
    remove_tree(root);
}

namespace {

// Runs f in a child; true when it returned within `seconds` (else the child is killed).
bool returns_within(double seconds, const std::function<void()>& f) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(static_cast<unsigned>(seconds) + 1);
        f();
        _exit(0);
    }
    int st = 0;
    auto t0 = std::chrono::steady_clock::now();
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(seconds)) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return false;
        }
        usleep(10000);
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace

TEST_CASE("the error file is in this user's private directory and read only when it is the user's own (issue 20, H3)",
          "[launcher][frameworks]") {
    // auto without --log: never a predictable name in a shared /tmp.
    Options o;
    const std::string path = resolve_error_file(o, "123", 4, 0);
    const std::string priv = node_private_dir("", "", std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "");
    REQUIRE_FALSE(priv.empty());
    CHECK(path == priv + "/gputopo-error.123.4.json");
    CHECK(path.find("/gputopo-launch." + std::to_string(geteuid()) + "/") != std::string::npos);
    o.log_dir = "/logs";
    CHECK(resolve_error_file(o, "123", 4, 0) == "/logs/gputopo-error.123.4.json");

    std::string dir = temp_dir();
    const std::string forged = torch_error_file("RuntimeError: CUDA error: unspecified launch failure Xid 79", "");
    // A FIFO: no open() that waits for a writer.
    const std::string fifo = dir + "/fifo.json";
    REQUIRE(mkfifo(fifo.c_str(), 0666) == 0);
    CHECK(returns_within(5, [&] { (void)read_error_record(fifo); }));
    ErrorRecord r = read_error_record(fifo);
    CHECK_FALSE(r.found);
    CHECK_THAT(r.problem, Catch::Contains(fifo) && Catch::Contains("is not a regular file"));
    // A link to someone's record: not followed.
    write_file(dir + "/real.json", forged);
    REQUIRE(symlink((dir + "/real.json").c_str(), (dir + "/link.json").c_str()) == 0);
    r = read_error_record(dir + "/link.json");
    CHECK_FALSE(r.found);
    CHECK_THAT(r.problem, Catch::Contains("is a symbolic link"));
    // Larger than 1 MiB: refused without reading it all.
    write_file(dir + "/big.json", std::string((1 << 20) + 1, ' '));
    CHECK_THAT(read_error_record(dir + "/big.json").problem, Catch::Contains("is larger than 1048576 bytes"));
    // Our own file is read.
    CHECK(read_error_record(dir + "/real.json").found);
    // Another user's file (planted first): refused, so a plain exit 1 stays a plain failure.
    if (geteuid() == 0) {
        REQUIRE(chown((dir + "/real.json").c_str(), 65534, 65534) == 0);
        r = read_error_record(dir + "/real.json");
        CHECK_FALSE(r.found);
        CHECK_THAT(r.problem, Catch::Contains("is owned by uid 65534"));
    }
    remove_tree(dir);
}

TEST_CASE("NCCL configuration files and pod files are read bounded, never blocking (issue 20, H8)",
          "[launcher][frameworks]") {
    std::string dir = temp_dir();
    // NCCL_CONF_FILE=/dev/zero grew without limit; a FIFO blocked.
    CHECK(returns_within(5, [] { (void)nccl_conf_values(env_of({{"NCCL_CONF_FILE", "/dev/zero"}}), "/nonexistent"); }));
    CHECK(nccl_conf_values(env_of({{"NCCL_CONF_FILE", "/dev/zero"}}), "/nonexistent").empty());
    REQUIRE(mkfifo((dir + "/nccl.fifo").c_str(), 0600) == 0);
    CHECK(returns_within(5, [&] { (void)nccl_conf_values(env_of({{"NCCL_CONF_FILE", dir + "/nccl.fifo"}}), "/nonexistent"); }));
    // A file far larger than any nccl.conf: ignored, not read line by line.
    write_file(dir + "/huge.conf", "NCCL_DEBUG=INFO\n" + std::string(2 << 20, '#'));
    CHECK(nccl_conf_values(env_of({{"NCCL_CONF_FILE", dir + "/huge.conf"}}), "/nonexistent").empty());
    write_file(dir + "/ok.conf", "NCCL_DEBUG=INFO\n");
    CHECK(nccl_conf_values(env_of({{"NCCL_CONF_FILE", dir + "/ok.conf"}}), "/nonexistent")["NCCL_DEBUG"].value == "INFO");
    // A pod root whose /proc/self/cgroup and GPU information files are FIFOs.
    std::string root = temp_dir();
    write_file(root + "/sys/fs/cgroup/cpuset.cpus.effective", "0-3\n");
    std::filesystem::create_directories(root + "/proc/self");
    REQUIRE(mkfifo((root + "/proc/self/cgroup").c_str(), 0600) == 0);
    std::filesystem::create_directories(root + "/proc/driver/nvidia/gpus/0000:01:00.0");
    REQUIRE(mkfifo((root + "/proc/driver/nvidia/gpus/0000:01:00.0/information").c_str(), 0600) == 0);
    CHECK(returns_within(5, [&] {
        (void)cgroup_cpuset(root);
        (void)pod_gpus(env_of({{"NVIDIA_VISIBLE_DEVICES", "GPU-8f6a0c1e-aaaa-bbbb-cccc-000000000001"}}), root);
    }));
    remove_tree(root);
    remove_tree(dir);
}

TEST_CASE("island order for SLURM_PROCID readers; JAX and isolate", "[launcher][frameworks]") {
    auto v = island_procid_env("2", "1");
    REQUIRE(v.size() == 2);
    CHECK(v[0].name == "SLURM_PROCID");
    CHECK(v[0].value == "2");
    CHECK_FALSE(v[0].user_wins);  // Slurm's value is replaced
    CHECK(v[1].name == "GPUTOPO_SLURM_PROCID");
    CHECK(v[1].value == "1");
    CHECK(island_procid_env("", "1").empty());

    // JAX: local_device_ids = [SLURM_LOCALID] must exist among the visible GPUs.
    CHECK(jax_device_problem(0, "3").empty());
    CHECK(jax_device_problem(3, "2,0,1,3").empty());
    CHECK_THAT(jax_device_problem(1, "3"), Catch::Contains("SLURM_LOCALID=1 but this task sees 1 GPU"));
    CHECK(jax_device_problem(1, "").empty());  // nothing hidden
}

// ---- gputopo-launch end to end (the binary next to GPUTOPO_CLI) ----

namespace {

std::string launcher_or_skip() {
    std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return "";
    std::string l = cli.substr(0, cli.rfind('/')) + "/gputopo-launch";
    REQUIRE(access(l.c_str(), X_OK) == 0);
    return l;
}

// Runs with exactly `env` (plus PATH) and returns rc/out/err.
gputopo_test::CliResult run_launcher(const std::string& launcher, const std::vector<std::string>& args, const Env& env) {
    std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    std::vector<std::string> env_s{"PATH=" + saved_path};
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    if (const char* a = std::getenv("ASAN_OPTIONS")) env_s.push_back(std::string("ASAN_OPTIONS=") + a + ":detect_leaks=0");
    if (const char* m = std::getenv("GPUTOPO_LAUNCH_TOPOLOGY_MODULE")) env_s.push_back(std::string("GPUTOPO_LAUNCH_TOPOLOGY_MODULE=") + m);
    std::vector<char*> envp;
    for (auto& s : env_s) envp.push_back(&s[0]);
    envp.push_back(nullptr);
    std::vector<std::string> argv_s{launcher};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    char out_path[] = "/tmp/gputopo-fw-out-XXXXXX", err_path[] = "/tmp/gputopo-fw-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        execve(launcher.c_str(), argv.data(), envp.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(out_fd);
    close(err_fd);
    gputopo_test::CliResult r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = gputopo_test::slurp(out_path);
    r.err = gputopo_test::slurp(err_path);
    unlink(out_path);
    unlink(err_path);
    return r;
}

std::string dry_value(const std::string& out, const std::string& name) {
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        size_t p = line.find("  " + name + "=");
        if (p == 0) {
            std::string v = line.substr(name.size() + 3);
            return v.substr(0, v.find(" (kept"));
        }
    }
    return "";
}

const char* kXe8640 = "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml";

}  // namespace

TEST_CASE("gputopo-launch under torchrun and mpirun: ranks found, LOCAL_RANK bound to its planned GPU", "[launcher][frameworks]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    std::string topo = gputopo_test::topology(kXe8640);
    // What the planner gives 4 tasks on this node's 4 GPUs (no Slurm, no CUDA_VISIBLE_DEVICES: all of them).
    gputopo::Node node = gputopo::load_topology_file(topo);
    gputopo::PlanRequest req;
    req.mode = gputopo::Mode::Closest;
    for (const auto& g : node.gpus) req.gpus.push_back(g.index);
    req.ntasks = static_cast<int>(node.gpus.size());
    gputopo::Plan plan = gputopo::make_plan(node, req);
    for (int local = 0; local < req.ntasks; ++local) {
        Env torchrun = {{"RANK", std::to_string(req.ntasks + local)}, {"LOCAL_RANK", std::to_string(local)},
                        {"WORLD_SIZE", std::to_string(2 * req.ntasks)}, {"LOCAL_WORLD_SIZE", std::to_string(req.ntasks)},
                        {"GROUP_RANK", "1"}, {"GROUP_WORLD_SIZE", "2"}, {"TORCHELASTIC_RUN_ID", "r1"},
                        {"MASTER_ADDR", "h0"}, {"MASTER_PORT", "29500"}};
        auto r = run_launcher(launcher, {"--dry-run", "--topology", topo, "--", "python", "train.py"}, torchrun);
        INFO(r.out << r.err);
        REQUIRE(r.rc == 0);
        CHECK_THAT(r.out, Catch::Contains("rank source: torchrun: rank " + torchrun["RANK"]));
        // The binding line (step::StepBinding's verbose line): "gpus=G (PCI) cpus=C ...".
        CHECK_THAT(r.out, Catch::Contains(" gpus=" + gputopo::join_ints(plan.tasks[static_cast<size_t>(local)].gpus) + " ("));
        CHECK_THAT(r.out, Catch::Contains(" cpus=" + plan.tasks[static_cast<size_t>(local)].cpus.to_list() + " "));
        // Shared view: position LOCAL_RANK holds the task's planned GPU.
        std::string cvd = dry_value(r.out, "CUDA_VISIBLE_DEVICES");
        std::vector<std::string> order;
        std::stringstream ss(cvd);
        for (std::string item; std::getline(ss, item, ',');) order.push_back(item);
        REQUIRE(order.size() == node.gpus.size());
        CHECK(order[static_cast<size_t>(local)] == std::to_string(plan.tasks[static_cast<size_t>(local)].gpus[0]));
        CHECK(dry_value(r.out, "RANK") == torchrun["RANK"]);  // torchrun's values stay
        CHECK(dry_value(r.out, "NODE_RANK") == "1");
    }
    Env ompi = {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}};
    auto r = run_launcher(launcher, {"--dry-run", "--topology", topo, "--", "true"}, ompi);
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("rank source: openmpi: rank 2 of 4, local 2 of 4"));
    CHECK_THAT(r.out, Catch::Contains(" gpus=" + gputopo::join_ints(plan.tasks[2].gpus) + " ("));
    CHECK(dry_value(r.out, "RANK") == "2");
    CHECK(dry_value(r.out, "LOCAL_RANK") == "2");
    CHECK(dry_value(r.out, "WORLD_SIZE") == "4");
}

TEST_CASE("gputopo-launch in a pod: PyTorchJob and JobSet environments, device-plugin GPUs, cgroup cpuset", "[launcher][frameworks]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    std::string root = temp_dir();
    write_file(root + "/sys/fs/cgroup/cpuset.cpus.effective", "0-15\n");
    std::string topo = gputopo_test::topology(kXe8640);
    Env pet = {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", "pj-master-0"}, {"PET_MASTER_PORT", "23456"},
               {"NVIDIA_VISIBLE_DEVICES", "GPU-11111111-2222-3333-4444-555555555555,GPU-11111111-2222-3333-4444-666666666666"}};
    auto r = run_launcher(launcher, {"--dry-run", "--sysroot", root, "--topology", topo, "--", "true"}, pet);
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("rank source: pytorchjob: rank 1 of 2"));
    CHECK_THAT(r.out, Catch::Contains("node GPUs: from NVIDIA_VISIBLE_DEVICES (node GPUs 0,1)"));
    CHECK_THAT(r.out, Catch::Contains("cgroup cpuset: 0-15"));
    CHECK(dry_value(r.out, "MASTER_ADDR") == "pj-master-0");
    CHECK(dry_value(r.out, "MASTER_PORT") == "23456");
    CHECK(dry_value(r.out, "RANK") == "1");
    CHECK(dry_value(r.out, "WORLD_SIZE") == "2");

    Env jobset = {{"JOB_COMPLETION_INDEX", "0"}, {"JOB_INDEX", "1"}, {"GPUTOPO_NNODES", "2"},
                  {"JOBSET_NAME", "llm"}, {"REPLICATED_JOB_NAME", "node"}, {"MASTER_PORT", "29500"},
                  {"NVIDIA_VISIBLE_DEVICES", "GPU-aaaaaaaa-2222-3333-4444-555555555555"}};
    r = run_launcher(launcher, {"--dry-run", "--sysroot", root, "--topology", topo, "--", "true"}, jobset);
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("rank source: indexed-job: rank 1 of 2"));
    CHECK(dry_value(r.out, "MASTER_ADDR") == "llm-node-0-0.llm");
    CHECK(dry_value(r.out, "RANK") == "1");

    // torchrun in a pod that got GPUs 2 and 3 of the node (by UUID): worker 1
    // is bound to its planned GPU among 2,3, and CUDA_VISIBLE_DEVICES uses the
    // container's numbering (0,1) with that GPU at position LOCAL_RANK.
    fake_node_gpus(root, 4);
    gputopo::Node node = gputopo::load_topology_file(topo);
    gputopo::PlanRequest req;
    req.mode = gputopo::Mode::Closest;
    req.gpus = {2, 3};
    req.ntasks = 2;
    gputopo::Plan plan = gputopo::make_plan(node, req);
    Env pod = {{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "1"},
               {"NVIDIA_VISIBLE_DEVICES", fake_uuid(3) + "," + fake_uuid(2)}};
    r = run_launcher(launcher, {"--dry-run", "--sysroot", root, "--topology", topo, "--", "true"}, pod);
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("node GPUs: from NVIDIA_VISIBLE_DEVICES (node GPUs 2,3, 0,1 in the container)"));
    int own = plan.tasks[1].gpus.at(0);
    CHECK_THAT(r.out, Catch::Contains(" gpus=" + std::to_string(own) + " ("));
    CHECK_THAT(r.out, Catch::Contains(" cpus=" + plan.tasks[1].cpus.to_list() + " "));
    std::string cvd = dry_value(r.out, "CUDA_VISIBLE_DEVICES");
    REQUIRE(cvd.size() == 3);
    CHECK(cvd[2] - '0' == own - 2);  // position 1 (LOCAL_RANK) holds its GPU, in the container's numbers
    CHECK(cvd[0] - '0' == 1 - (own - 2));
    remove_tree(root);
}

TEST_CASE("gputopo-launch: --island-procid rewrites SLURM_PROCID; --framework=jax and isolate", "[launcher][frameworks]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    std::string dir = temp_dir();
    // Islands interleaved with the node list: island order n1 n3 n2 n4.
    write_file(dir + "/gputopo.conf", "Island=a Nodes=n1,n3\nIsland=b Nodes=n2,n4\n");
    Env slurm = {{"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "0"},
                 {"SLURM_NODEID", "1"}, {"SLURMD_NODENAME", "n2"}, {"SLURM_STEP_NODELIST", "n[1-4]"},
                 {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_STEP_NUM_NODES", "4"}};
    auto r = run_launcher(launcher, {"--dry-run", "--gpu-topo", "none", "--rank-order", "island", "--islands",
                                     dir + "/gputopo.conf", "--island-procid", "--", "true"},
                          slurm);
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK(dry_value(r.out, "RANK") == "2");
    CHECK(dry_value(r.out, "SLURM_PROCID") == "2");  // what JAX and Lightning's Slurm path read
    CHECK(dry_value(r.out, "GPUTOPO_SLURM_PROCID") == "1");
    CHECK(dry_value(r.out, "MASTER_ADDR") == "n1");  // island rank 0 sits on the node list's first node
    r = run_launcher(launcher, {"--dry-run", "--gpu-topo", "none", "--rank-order", "island", "--islands",
                                dir + "/gputopo.conf", "--", "true"},
                     slurm);
    CHECK(dry_value(r.out, "SLURM_PROCID").empty());  // opt-in only

    // JAX: a task the plugin isolated to one GPU at local id 1 is refused.
    Env isolated = slurm;
    isolated["SLURM_LOCALID"] = "1";
    isolated["SLURM_STEP_TASKS_PER_NODE"] = "2(x4)";
    isolated["GPUTOPO_MODE"] = "closest";
    isolated["CUDA_VISIBLE_DEVICES"] = "3";
    r = run_launcher(launcher, {"--framework", "jax", "--", "true"}, isolated);
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("JAX takes local device SLURM_LOCALID=1 but this task sees 1 GPU(s)"));
    // The launcher's own binding with isolate: JAX gets the shared view instead.
    Env own = slurm;
    own["SLURM_LOCALID"] = "1";
    own["SLURM_STEP_TASKS_PER_NODE"] = "4(x4)";
    own["SLURM_STEP_GPUS"] = "0,1,2,3";
    std::string topo = gputopo_test::topology(kXe8640);
    r = run_launcher(launcher, {"--dry-run", "--framework", "jax", "--gpu-topo", "closest,isolate", "--topology", topo,
                                "--", "true"},
                     own);
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    std::string cvd = dry_value(r.out, "CUDA_VISIBLE_DEVICES");
    CHECK(std::count(cvd.begin(), cvd.end(), ',') == 3);
    r = run_launcher(launcher, {"--dry-run", "--gpu-topo", "closest,isolate", "--topology", topo, "--", "true"}, own);
    CHECK(dry_value(r.out, "CUDA_VISIBLE_DEVICES").find(',') == std::string::npos);  // without it: isolated
    remove_tree(dir);
}

TEST_CASE("gputopo-launch: a NCCL setting in ~/.nccl.conf is the user's", "[launcher][frameworks]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    if (socket_ifname_value(list_interfaces()).empty()) {
        WARN("no usable network interface here: the launcher sets no NCCL_SOCKET_IFNAME to keep");
        return;
    }
    std::string home = temp_dir(), root = temp_dir();
    write_file(home + "/.nccl.conf", "NCCL_SOCKET_IFNAME=eth7\n");
    auto r = run_launcher(launcher, {"--dry-run", "--sysroot", root, "--gpu-topo", "none", "--", "true"}, {{"HOME", home}});
    INFO(r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("  NCCL_SOCKET_IFNAME=eth7 (kept: set by the user"));
    CHECK_FALSE(dry_value(r.out, "GLOO_SOCKET_IFNAME").empty());  // gloo does not read nccl.conf
    r = run_launcher(launcher, {"--dry-run", "--sysroot", root, "--gpu-topo", "none", "--", "true"}, {{"HOME", root}});
    CHECK(dry_value(r.out, "NCCL_SOCKET_IFNAME").rfind("=", 0) == 0);  // without the file: gputopo's list
    remove_tree(home);
    remove_tree(root);
}

TEST_CASE("gputopo-launch: the program's @record error file is classified and logged", "[launcher][frameworks]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    std::string dir = temp_dir();
    // A stale file from an earlier run is removed before the program starts.
    write_file(dir + "/gputopo-error.nojob.0.json", torch_error_file("RuntimeError: CUDA error: stale", ""));
    std::string json = torch_error_file("RuntimeError: CUDA error: an illegal memory access was encountered", "Traceback");
    write_file(dir + "/payload.json", json);
    std::string prog = "test ! -e \"$TORCHELASTIC_ERROR_FILE\" || exit 9; cp '" + dir +
                       "/payload.json' \"$TORCHELASTIC_ERROR_FILE\"; exit 1";
    auto r = run_launcher(launcher, {"--log", dir, "--no-requeue", "--gpu-topo", "none", "--", "/bin/sh", "-c", prog}, {});
    INFO(r.out << r.err);
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::Contains("gpu_fault"));
    CHECK_THAT(r.err, Catch::Contains("error file: RuntimeError: CUDA error: an illegal memory access"));
    std::string events = gputopo_test::slurp(dir + "/gputopo-launch.nojob.0.jsonl");
    CHECK_THAT(events, Catch::Contains("\"event\": \"error_file\""));
    CHECK_THAT(events, Catch::Contains("\"class\": \"gpu_fault\""));
    remove_tree(dir);
}

TEST_CASE("gputopo-launch: GPUTOPO_LAUNCH_TOPOLOGY_MODULE names the readers' module it loads", "[launcher]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    const std::string topo = gputopo_test::topology(kXe8640);
    const Env torchrun = {{"RANK", "0"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_WORLD_SIZE", "1"},
                          {"GROUP_RANK", "0"}, {"GROUP_WORLD_SIZE", "1"}, {"TORCHELASTIC_RUN_ID", "r1"},
                          {"MASTER_ADDR", "h0"}, {"MASTER_PORT", "29500"}};
    Env missing = torchrun;
    missing["GPUTOPO_LAUNCH_TOPOLOGY_MODULE"] = "/nonexistent/gputopo-readers.so";
    auto r = run_launcher(launcher, {"--dry-run", "--topology", topo, "--", "true"}, missing);
    INFO(r.out << r.err);
    CHECK_THAT(r.out + r.err, Catch::Contains("/nonexistent/gputopo-readers.so"));
    CHECK_THAT(r.out, !Catch::Contains(" gpus=0 ("));
    // Without it, the module beside the launcher binds the task.
    auto ok = run_launcher(launcher, {"--dry-run", "--topology", topo, "--", "true"}, torchrun);
    INFO(ok.out << ok.err);
    REQUIRE(ok.rc == 0);
    CHECK_THAT(ok.out, Catch::Contains(" gpus="));
    // A reader's error in the module comes back across it with its message (readers.hpp:
    // no exception crosses; the proxy throws it again on the launcher's side).
    const std::string not_xml = "/tmp/gputopo-launch-test-notxml-" + std::to_string(getpid());
    { std::ofstream(not_xml) << "hello\n"; }
    auto bad = run_launcher(launcher, {"--dry-run", "--topology", not_xml, "--", "true"}, torchrun);
    std::remove(not_xml.c_str());
    INFO(bad.out << bad.err);
    CHECK(bad.rc == 0);
    CHECK_THAT(bad.err, Catch::Contains("topology file " + not_xml + " is not XML (line 1:"));
    CHECK_THAT(bad.err, Catch::Contains("running unbound"));
}

TEST_CASE("gputopo-launch: a bad command line is one line naming the program, exit 2 (issue 36)", "[launcher][cli]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    auto typo = run_launcher(launcher, {"--rank-ordr=island", "--", "true"}, {});
    CHECK(typo.rc == 2);
    CHECK(typo.err.rfind("gputopo-launch: unknown option '--rank-ordr'", 0) == 0);
    CHECK_THAT(typo.err, Catch::Contains("did you mean --rank-order?"));
    CHECK_THAT(typo.err, Catch::EndsWith("; see gputopo-launch --help\n"));
    CHECK(std::count(typo.err.begin(), typo.err.end(), '\n') == 1);
    auto none = run_launcher(launcher, {"--gpu-topo", "none"}, {});
    CHECK(none.rc == 2);
    CHECK(none.err == "gputopo-launch: no program to run (expected: gputopo-launch [OPTIONS] -- PROGRAM [ARGS...])\n");
}

TEST_CASE("gputopo-launch: an overflowing SLURM_PROCID or count is one message naming it (issue 33, finding 12)",
          "[launcher][frameworks]") {
    std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    const std::string topo = gputopo_test::topology(kXe8640);
    for (const char* var : {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_RESTART_COUNT"}) {
        INFO(var);
        Env env = {{"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}};
        env[var] = "99999999999";  // wrapped to a negative int before: "...-1.json" error files
        auto r = run_launcher(launcher, {"--dry-run", "--topology", topo, "--", "true"}, env);
        CHECK(r.rc == 2);
        CHECK_THAT(r.err, Catch::Contains(std::string(var) + "='99999999999': expected a whole number from 0 to"));
        CHECK(r.err.find("internal error") == std::string::npos);
    }
}
