// gputopo with Slurm's own binding and configuration: GPUs named by UUID
// (GPU-..., MIG-...), the user's --gpu-bind, steps without GPUs, and islands
// from Slurm's topology.conf / topology.yaml without islands=.
#include <catch2/catch.hpp>

#include <chrono>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "launcher/env/binding.hpp"
#include "step/gpu_ids.hpp"
#include "step/option_parser.hpp"
#include "step/step_inputs.hpp"
#include "step/step_binding.hpp"
#include "step/user_gpu_bind.hpp"
#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"
#include "tests/unit/json_parse.hpp"
#include "tests/unit/nvml_fake.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/slurm_islands.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/node_snapshot.hpp"
#include "topo/sources/nvml_source.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"
#include "topo/core/host.hpp"

using namespace gputopo;
using namespace gputopo::step;
using gputopo_test::FakeNvmlScenario;

namespace {

using Env = std::map<std::string, std::string>;

Getenv env_of(const std::map<std::string, std::string>& m) {
    return [m](const std::string& n) -> std::optional<std::string> {
        auto it = m.find(n);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}

// The step binding of `node` for a step whose environment is `step_env`
// (`tasks` local tasks, --gpu-topo=`options`); `on_host`: the topology's CPUs
// are this host's.
StepBinding binding_of(const Node& node, const Getenv& step_env, const std::string& options, int tasks,
                       bool on_host, const std::string& name) {
    StepSetup setup;
    setup.env = step_env;
    setup.options = parse_gpu_topo(options);
    setup.node_name = name;
    setup.local_tasks = tasks;
    if (on_host) setup.host_cpus = node.cpus;
    setup.affinity = node.cpus;
    return StepBinding(setup, node);
}

std::map<std::string, std::string> set_of(const TaskAction& a) {
    std::map<std::string, std::string> out;
    for (const auto& v : a.set) out[v.name] = v.value;
    return out;
}

const char* kH200 = "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";
const char* kXe8640 = "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml";

// The fixture's "mig BUSID UUID" lines, read here independently of the fake.
std::map<std::string, std::vector<std::string>> fixture_migs(const std::string& file) {
    std::map<std::string, std::vector<std::string>> out;
    std::ifstream in(gputopo_test::nvml_fixture(file));
    std::string line;
    std::regex re("^mig ([0-9a-f:.]+) (MIG-[0-9a-f-]+)$");
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_match(line, m, re)) out[m[1]].push_back(m[2]);
    return out;
}

// The H200 box with NVML merged from the MIG scenario (through the real dlopen path).
Node h200_with_mig() {
    std::string lib = gputopo_test::fake_nvml_library();
    REQUIRE(gputopo_test::file_exists(lib));
    Node node = load_topology_file(gputopo_test::topology(kH200));
    FakeNvmlScenario sc("hgx-h200-mig.nvml");
    NvmlSnapshot s = read_nvml(lib);
    REQUIRE(s.available);
    merge_nvml(node, s);
    return node;
}

std::string temp_dir() {
    char tmpl[] = "/tmp/gputopo-slurm-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    return tmpl;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("NVML: MIG instances of each GPU through the fake library", "[slurm-uuid][nvml]") {
    std::string lib = gputopo_test::fake_nvml_library();
    REQUIRE(gputopo_test::file_exists(lib));
    FakeNvmlScenario sc("hgx-h200-mig.nvml");
    NvmlSnapshot s = read_nvml(lib);
    REQUIRE(s.available);
    auto want = fixture_migs("hgx-h200-mig.nvml");
    REQUIRE(want.size() == 2);
    for (const auto& g : s.gpus) {
        INFO(g.pci.to_string());
        auto it = want.find(g.pci.to_string());
        CHECK(g.mig_uuids == (it == want.end() ? std::vector<std::string>{} : it->second));
    }
}

// Slurm's gres/gpu with gpu/nvml and MIG: CUDA_VISIBLE_DEVICES lists the
// instances' unique ids ("MIG-<uuid>", gpu_nvml.c _handle_mig(), drivers >=
// 470.42.01), written by gres_common.c common_gres_set_env() ("If unique_id is
// set for the device, assume that we want to use it for the env var",
// Slurm 22.05 src/plugins/gres/common/gres_common.c:343-348); SLURM_STEP_GPUS
// holds the GRES record indices (global_env_index = gres_device->index), here
// 4,5,9: not GPU indices.
TEST_CASE("MIG UUIDs as Slurm writes them: kept, in the planned order, CPUs of the parent GPU", "[slurm-uuid]") {
    Node node = h200_with_mig();
    auto migs = fixture_migs("hgx-h200-mig.nvml");
    const std::vector<std::string>& on_a3 = migs["0000:a3:00.0"];
    const std::vector<std::string>& on_b3 = migs["0000:b3:00.0"];
    const std::string cvd = on_b3[0] + "," + on_a3[0] + "," + on_a3[1];
    const Getenv step_env = env_of({{"SLURM_STEP_GPUS", "4,5,9"}, {"CUDA_VISIBLE_DEVICES", cvd}});
    StepInputs in = read_step_inputs(step_env);
    REQUIRE(in.device_ids.size() == 3);
    resolve_step_devices(node, in);
    CHECK(in.device_problem.empty());
    int gpu_a3 = -1, gpu_b3 = -1;
    for (const Gpu& g : node.gpus) {
        if (g.pci.to_string() == "0000:a3:00.0") gpu_a3 = g.index;
        if (g.pci.to_string() == "0000:b3:00.0") gpu_b3 = g.index;
    }
    CHECK(in.gpus == std::vector<int>{std::min(gpu_a3, gpu_b3), std::max(gpu_a3, gpu_b3)});

    const StepBinding sb = binding_of(node, step_env, "closest,verbose", 2, false, "n1");
    CHECK(sb.inputs().gpus == in.gpus);
    const Plan& plan = sb.plan();
    for (int t = 0; t < 2; ++t) {
        // Slurm gives every task the step's instances (no per-task narrowing here).
        TaskAction a = sb.task(t, env_of({{"CUDA_VISIBLE_DEVICES", cvd}}));
        auto set = set_of(a);
        const TaskBinding& b = plan.tasks[static_cast<size_t>(t)];
        REQUIRE(b.gpus.size() == 1);
        // The same three instances, the task's own GPU's first (set_device(LOCAL_RANK) lands on it).
        std::vector<std::string> got;
        std::stringstream ss(set["CUDA_VISIBLE_DEVICES"]);
        for (std::string x; std::getline(ss, x, ',');) got.push_back(x);
        std::vector<std::string> sorted_got = got, sorted_want = in.device_ids;
        std::sort(sorted_got.begin(), sorted_got.end());
        std::sort(sorted_want.begin(), sorted_want.end());
        CHECK(sorted_got == sorted_want);
        CHECK(parent_gpu(node, got[static_cast<size_t>(t)]) == b.gpus[0]);
        CHECK(set["GPUTOPO_GPUS"] == std::to_string(b.gpus[0]));
        CHECK(set["GPUTOPO_CPUS"] == b.cpus.to_list());
        CHECK(node.gpu(b.gpus[0])->local_cpus.contains(b.cpus));
        CHECK(a.verbose_line.find("visible=" + set["CUDA_VISIBLE_DEVICES"]) != std::string::npos);
    }
}

TEST_CASE("MIG UUID narrowed per task by Slurm: the task keeps its instance, CPUs follow its GPU", "[slurm-uuid]") {
    Node node = h200_with_mig();
    auto migs = fixture_migs("hgx-h200-mig.nvml");
    const std::string step = migs["0000:a3:00.0"][2] + "," + migs["0000:b3:00.0"][1];
    const StepBinding sb =
        binding_of(node, env_of({{"SLURM_STEP_GPUS", "3,7"}, {"CUDA_VISIBLE_DEVICES", step}}), "closest", 2, false, "n1");
    // Task 1 got the first instance from Slurm (--gpus-per-task=1 narrows per task).
    const std::string own = migs["0000:a3:00.0"][2];
    TaskAction a = sb.task(1, env_of({{"CUDA_VISIBLE_DEVICES", own}}));
    auto set = set_of(a);
    CHECK(set["CUDA_VISIBLE_DEVICES"] == own);
    const int parent = parent_gpu(node, own);
    CHECK(set["GPUTOPO_GPUS"] == std::to_string(parent));
    CHECK(node.gpu(parent)->local_cpus.contains(CpuSet::parse_list(set["GPUTOPO_CPUS"])));
}

// gputopo-launch under --gpus-per-task with gpu/nvml: each task sees only its
// own UUID, and the local tasks exchange GPU indices only, so the task is
// planned alone on its own GPU (not as one of N tasks sharing it).
TEST_CASE("launcher: a task narrowed to its own UUID keeps it, CPUs of its GPU", "[slurm-uuid]") {
    Node node = h200_with_mig();
    REQUIRE(node.gpus.size() == 8);
    const std::string own = node.gpus[5].uuid;
    REQUIRE(!own.empty());
    Getenv task = env_of({{"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "4"},
                          {"SLURMD_NODENAME", "n1"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_GPUS", "5"},
                          {"CUDA_VISIBLE_DEVICES", own}});
    const std::vector<int> learned{1, 3, 5, 7};
    const launch::TaskPlace place = launch::read_task_place(task, gputopo::host_name());
    TaskAction a = launch::binding_for(node, parse_gpu_topo("closest"), task, place, true, learned, node.cpus, node.cpus);
    auto set = set_of(a);
    CHECK(set["CUDA_VISIBLE_DEVICES"] == own);
    CHECK(set["GPUTOPO_GPUS"] == "5");
    PlanRequest alone;
    alone.gpus = {5};
    alone.mode = Mode::Closest;
    alone.allowed_cpus = node.cpus;
    CHECK(set["GPUTOPO_CPUS"] == make_plan(node, alone).tasks[0].cpus.to_list());
    CHECK(node.gpu(5)->local_cpus.contains(CpuSet::parse_list(set["GPUTOPO_CPUS"])));
}

TEST_CASE("GPU UUIDs (gpu/nvml without MIG) and the legacy MIG-GPU-<uuid>/gi/ci form", "[slurm-uuid]") {
    Node node = h200_with_mig();
    // gpu_nvml.c: gres_slurmd_conf.unique_id = uuid for a whole GPU.
    std::vector<std::string> uuids;
    for (const Gpu& g : node.gpus) uuids.push_back(g.uuid);
    REQUIRE(uuids.size() == 8);
    const std::string cvd = uuids[6] + "," + uuids[1];
    const StepBinding sb =
        binding_of(node, env_of({{"SLURM_STEP_GPUS", "1,6"}, {"CUDA_VISIBLE_DEVICES", cvd}}), "island", 2, false, "n1");
    CHECK(sb.inputs().gpus == std::vector<int>{1, 6});
    const Plan& plan = sb.plan();
    for (int t = 0; t < 2; ++t) {
        TaskAction a = sb.task(t, env_of({}));
        const TaskBinding& b = plan.tasks[static_cast<size_t>(t)];
        // Position t holds task t's GPU (set_device(LOCAL_RANK)), the step's two GPUs in all.
        const std::string own = uuids[static_cast<size_t>(b.gpus[0])];
        const std::string other = uuids[static_cast<size_t>(plan.tasks[static_cast<size_t>(1 - t)].gpus[0])];
        CHECK(set_of(a)["CUDA_VISIBLE_DEVICES"] == (t == 0 ? own + "," + other : other + "," + own));
    }
    // Drivers before 470.42.01: "MIG-<GPU-UUID>/<GI>/<CI>" (gpu_nvml.c: "MIG-%s/%u/%u", gpu_uuid, gi_id, ci_id).
    CHECK(parent_gpu(node, "MIG-" + uuids[4] + "/1/0") == 4);
    CHECK(split_device_uuids("0,1").empty());
    CHECK(split_device_uuids("NoDevFiles").empty());
    CHECK(split_device_uuids("GPU-a,3").empty());
}

TEST_CASE("UUIDs no GPU of the topology knows: visible devices stay as Slurm set them, said once", "[slurm-uuid]") {
    Node node = load_topology_file(gputopo_test::topology(kXe8640));  // hwloc XML without UUIDs, no NVML
    const std::string cvd = "MIG-11111111-2222-3333-4444-555555555555";
    const StepBinding sb =
        binding_of(node, env_of({{"SLURM_STEP_GPUS", "0"}, {"CUDA_VISIBLE_DEVICES", cvd}}), "closest", 1, false, "n3");
    const StepInputs& in = sb.inputs();
    CHECK(in.device_problem.find(cvd) != std::string::npos);
    CHECK(in.device_problem.find("stay as Slurm set them") != std::string::npos);
    TaskAction a = sb.task(0, env_of({{"CUDA_VISIBLE_DEVICES", cvd}}));
    auto set = set_of(a);
    CHECK(set.count("CUDA_VISIBLE_DEVICES") == 0);
    CHECK(set.count("ROCR_VISIBLE_DEVICES") == 0);
    CHECK(!set["GPUTOPO_CPUS"].empty());
}

TEST_CASE("--gpu-bind from srun's command line and environment", "[slurm-gpu-bind]") {
    auto none = env_of({});
    using V = std::vector<std::string>;
    CHECK(user_gpu_bind(V{"srun", "-n4", "--gpu-bind=map_gpu:3,2,1,0", "prog"}, none) == "map_gpu:3,2,1,0");
    CHECK(user_gpu_bind(V{"srun", "-n", "4", "--gpu-bind", "mask_gpu:0x8,0x4", "prog"}, none) == "mask_gpu:0x8,0x4");
    CHECK(user_gpu_bind(V{"srun", "--gpu-bind=verbose,single:1", "prog"}, none) == "single:1");
    CHECK(user_gpu_bind(V{"srun", "--gpu-bind=verbose", "prog"}, none).empty());
    CHECK(user_gpu_bind(V{"srun", "--tres-bind=gres/gpu:closest", "prog"}, none) == "closest");
    CHECK(user_gpu_bind(V{"srun", "--tres-bind", "gres/gpu:map_gpu:1,0+gres/nic:closest", "p"}, none) ==
          "map_gpu:1,0");
    CHECK(user_gpu_bind(V{"srun", "--gpu-bind=none", "prog"}, none) == "none");
    // After the program: the program's argument, not srun's.
    CHECK(user_gpu_bind(V{"srun", "-n4", "prog", "--gpu-bind=map_gpu:1"}, none).empty());
    CHECK(user_gpu_bind(V{"srun", "--pty", "bash", "--gpu-bind=map_gpu:1"}, none).empty());
    CHECK(user_gpu_bind(V{"srun", "-w", "n1", "--", "--gpu-bind=map_gpu:1"}, none).empty());
    // Flags take no value: "--exclusive prog" ends srun's options at prog.
    CHECK(user_gpu_bind(V{"srun", "--exclusive", "prog", "--gpu-bind=closest"}, none).empty());
    // srun's input variables (and sbatch's output variable for its script).
    CHECK(user_gpu_bind(V{"srun", "prog"}, env_of({{"SLURM_GPU_BIND", "map_gpu:1,0"}})) == "map_gpu:1,0");
    CHECK(user_gpu_bind(V{"srun", "prog"}, env_of({{"SLURM_TRES_BIND", "gres/gpu:single:2"}})) == "single:2");
    CHECK(user_gpu_bind(V{"srun", "--gpu-bind=closest", "prog"}, env_of({{"SLURM_GPU_BIND", "none"}})) ==
          "closest");
}

// What Slurm 22.05 gives task i of `srun -n4 --gpus-per-task=1 --gpu-bind=map_gpu:3,2,1,0`
// (loopback cluster): SLURM_STEP_GPUS=3-i and CUDA_VISIBLE_DEVICES=3-i in the task's environment.
TEST_CASE("--gpu-bind kept: the task keeps Slurm's GPUs, CPUs around them, verbose says so", "[slurm-gpu-bind]") {
    Node node = load_topology_file(gputopo_test::topology(kXe8640));
    Env step_env = {{"SLURM_STEP_GPUS", "0,1,2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"},
                    {"GPUTOPO_GPU_BIND", "map_gpu:3,2,1,0"}};
    const StepBinding sb = binding_of(node, env_of(step_env), "closest,verbose", 4, false, "n3");
    CHECK(sb.inputs().gpu_bind == "map_gpu:3,2,1,0");
    for (int t = 0; t < 4; ++t) {
        const std::string slurm = std::to_string(3 - t);
        TaskAction a = sb.task(t, env_of({{"SLURM_STEP_GPUS", slurm}, {"CUDA_VISIBLE_DEVICES", slurm}}));
        auto set = set_of(a);
        CHECK(set.count("CUDA_VISIBLE_DEVICES") == 0);  // Slurm's value stays
        CHECK(set["GPUTOPO_GPUS"] == slurm);
        PlanRequest alone;
        alone.gpus = {3 - t};
        alone.mode = Mode::Closest;
        CHECK(set["GPUTOPO_CPUS"] == make_plan(node, alone).tasks[0].cpus.to_list());
        CHECK(a.verbose_line.find("gpus kept from --gpu-bind=map_gpu:3,2,1,0") != std::string::npos);
    }
    // --gpu-bind=none / closest under task/none: every task sees the step's set; the
    // planned GPU is inside it, so the planned CPUs stay and Slurm's visibility too.
    step_env["GPUTOPO_GPU_BIND"] = "none";
    const StepBinding none = binding_of(node, env_of(step_env), "closest,verbose", 4, false, "n3");
    TaskAction a = none.task(2, env_of({{"SLURM_STEP_GPUS", "0,1,2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}}));
    CHECK(set_of(a).count("CUDA_VISIBLE_DEVICES") == 0);
    CHECK(set_of(a)["GPUTOPO_CPUS"] == none.plan().tasks[2].cpus.to_list());
    // Without a user binding gputopo orders the GPUs itself.
    step_env.erase("GPUTOPO_GPU_BIND");
    const StepBinding own = binding_of(node, env_of(step_env), "closest,verbose", 4, false, "n3");
    a = own.task(0, env_of({{"SLURM_STEP_GPUS", "3"}}));
    CHECK(set_of(a).count("CUDA_VISIBLE_DEVICES") == 1);
    CHECK(a.verbose_line.find("gpus kept") == std::string::npos);
}

TEST_CASE("a step without GPUs binds CPUs and memory only", "[slurm-gpu-bind]") {
    Node node = load_topology_file(gputopo_test::topology(kXe8640));
    // Slurm empties CUDA_VISIBLE_DEVICES for a step without GPUs on a node with GPU GRES.
    const StepBinding sb = binding_of(node, env_of({{"CUDA_VISIBLE_DEVICES", ""}}), "closest", 2, true, "n3");
    CHECK(sb.inputs().gpus.empty());
    REQUIRE(sb.plan().tasks.size() == 2);
    std::set<std::string> cpus;
    for (int t = 0; t < 2; ++t) {
        TaskAction a = sb.task(t, env_of({}));
        auto set = set_of(a);
        CHECK(set.count("CUDA_VISIBLE_DEVICES") == 0);
        CHECK(set.count("GPUTOPO_GPUS") == 0);
        CHECK(!set["GPUTOPO_CPUS"].empty());
        CHECK(node.cpus.contains(CpuSet::parse_list(set["GPUTOPO_CPUS"])));
        cpus.insert(set["GPUTOPO_CPUS"]);
    }
    CHECK(cpus.size() == 2);  // two tasks, two CPU sets
}

TEST_CASE("topology.yaml: the cluster default topology's tree leaves and blocks", "[islands][slurm-topology]") {
    IslandMap map;
    const std::string file =
        gputopo_test::topology("slurm/slurm-man5-topology.yaml_EXAMPLE.yaml");
    read_slurm_topology_yaml(file, map);
    // topo1 (cluster_default: true) is a tree: leaves s1 = node[01-02], s2 = node[03-04]; sw_root has children only.
    REQUIRE(map.size() == 2);
    CHECK(map.island(map.find("node01")).name == "s1");
    CHECK(map.island(map.find("node02")).name == "s1");
    CHECK(map.island(map.find("node04")).name == "s2");
    CHECK(map.find("node05") == IslandMap::npos);  // only in topo2's blocks, not the default topology
    CHECK(map.source_of("node03") == IslandSource::TopologyTree);

    // A block topology as the default: its blocks are the islands.
    IslandMap blocks;
    parse_slurm_topology_yaml("---\n- topology: t\n  cluster_default: true\n  block:\n    block_sizes:\n      - 18\n"
                              "    blocks:\n      - block: rack1\n        nodes: gb[001-018]\n"
                              "      - block: \"rack2\"\n        nodes: gb[019-036]  # second rack\n",
                              "topology.yaml", blocks);
    REQUIRE(blocks.size() == 2);
    CHECK(blocks.island(blocks.find("gb020")).name == "rack2");
    CHECK(blocks.source_of("gb001") == IslandSource::TopologyBlock);

    // Unsupported YAML is one message naming file and line.
    IslandMap bad;
    try {
        parse_slurm_topology_yaml("- topology: t\n  tree: &a\n", "x.yaml", bad);
        FAIL("no error");
    } catch (const ParseError& e) {
        CHECK(std::string(e.what()).rfind("x.yaml:2: ", 0) == 0);
    }
}

// The islands of a map as "node=island" lines, to compare two readings.
static std::string islands_of(const IslandMap& map, const std::vector<std::string>& nodes) {
    std::string out;
    for (const auto& n : nodes) {
        size_t i = map.find(n);
        out += n + "=" + (i == IslandMap::npos ? std::string("-") : map.island(i).name) + "\n";
    }
    return out;
}

TEST_CASE("topology.yaml: flow style reads as the same block style (block_sizes: [2], nested, several lines)",
          "[islands][slurm-topology]") {
    std::vector<std::string> nodes;
    for (int i = 1; i <= 16; ++i) nodes.push_back((i < 10 ? "node0" : "node") + std::to_string(i));
    IslandMap block_style;
    read_slurm_topology_yaml(gputopo_test::topology("slurm/slurm-man5-topology.yaml_EXAMPLE.yaml"), block_style);
    // topology.yaml(5)'s example, its first two topologies in flow style as YAML writers emit it.
    IslandMap flow_style;
    parse_slurm_topology_yaml(
        "- topology: topo1\n  cluster_default: true\n"
        "  tree: {switches: [{switch: sw_root, children: \"s[1-2]\"},\n"
        "                    {switch: s1, nodes: \"node[01-02]\"},  # leaf\n"
        "                    {switch: s2, nodes: 'node[03-04]'}]}\n"
        "- {topology: topo2, cluster_default: false}\n",
        "flow.yaml", flow_style);
    CHECK(islands_of(flow_style, nodes) == islands_of(block_style, nodes));
    CHECK(flow_style.size() == 2);

    IslandMap blocks;
    parse_slurm_topology_yaml("- topology: t\n  cluster_default: true\n  block:\n    block_sizes: [2]\n    blocks:\n"
                              "      - {block: b1, nodes: \"n[1-2]\"}\n      - block: b2\n        nodes: n[3-4]\n",
                              "b.yaml", blocks);
    REQUIRE(blocks.size() == 2);
    CHECK(blocks.island(blocks.find("n2")).name == "b1");
    CHECK(blocks.island(blocks.find("n3")).name == "b2");
    // Lists for nodes:, block_sizes: [4, 16] and more: compared with libyaml below.

    // Not YAML, or not closed: one message naming the file and the line.
    for (const char* text : {"- topology: t\n  tree: {switches: [\n", "- topology: t\n  block: {blocks: [{block: b1 nodes: x]}\n",
                             "- topology: t\n  block:\n    block_sizes: [2] extra\n"}) {
        IslandMap bad;
        INFO(text);
        try {
            parse_slurm_topology_yaml(text, "x.yaml", bad);
            FAIL("no error");
        } catch (const ParseError& e) {
            CHECK(std::string(e.what()).rfind("x.yaml:", 0) == 0);
        }
    }
}

TEST_CASE("topology.yaml: a flow collection over many lines is read in linear time, and bounded (issue 33, finding 9)",
          "[islands][slurm-topology]") {
    using clock = std::chrono::steady_clock;
    // 32k lines of one flow list took 42 s (the bracket balance was recounted from the start at every line).
    std::string text = "- topology: t\n  cluster_default: true\n  block:\n    blocks: [\n";
    const int n = 32000;
    for (int i = 0; i < n; ++i) text += "      {block: b" + std::to_string(i) + ", nodes: \"x" + std::to_string(i) + "\"},\n";
    text += "    ]\n";
    IslandMap map;
    auto t0 = clock::now();
    parse_slurm_topology_yaml(text, "big.yaml", map);
    const double took = std::chrono::duration<double>(clock::now() - t0).count();
    CHECK(map.size() == static_cast<size_t>(n));
    CHECK(took < 5.0);
    // An unclosed '[' before 16 MiB of lines (60 s and more before): one message, at once.
    auto error_of = [](const std::string& t) {
        IslandMap m;
        try {
            parse_slurm_topology_yaml(t, "u.yaml", m);
        } catch (const ParseError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    std::string unclosed = "- topology: t\n  block:\n    blocks: [\n";
    while (unclosed.size() < (size_t{16} << 20)) unclosed += "      {block: b1, nodes: x1},\n";
    t0 = clock::now();
    const std::string msg = error_of(unclosed);
    CHECK_THAT(msg, Catch::StartsWith("u.yaml:3: 'blocks: [': a flow collection") && Catch::Contains("longer than 4 MiB"));
    CHECK(std::chrono::duration<double>(clock::now() - t0).count() < 5.0);
    // Nesting: 100,000 '[' over many lines stops at 32 levels.
    std::string deep = "- topology: t\n  block:\n    blocks: ";
    for (int i = 0; i < 100000; ++i) deep += i % 100 == 99 ? "[\n" : "[";
    CHECK_THAT(error_of(deep), Catch::Contains("nested more than 32 deep"));
}

TEST_CASE("topology.yaml: the reader gives the islands libyaml (Slurm's YAML parser) reads, on every example",
          "[islands][slurm-topology]") {
    if (access("/usr/bin/python3", X_OK) != 0 ||
        gputopo_test::run_cli("/usr/bin/python3", {"-c", "import yaml; assert yaml.__with_libyaml__"}).rc != 0) {
        WARN("python3-yaml with libyaml is not installed: the reader is not compared with libyaml (make deps installs it)");
        return;
    }
    const std::string script = gputopo_test::source_dir() + "/tests/unit/yaml_islands.py";
    std::vector<std::string> samples{
        gputopo_test::slurp(gputopo_test::topology("slurm/slurm-man5-topology.yaml_EXAMPLE.yaml")),
        "- topology: t\n  cluster_default: true\n  block:\n    block_sizes: [2]\n    blocks:\n"
        "      - {block: b1, nodes: \"n[1-2]\"}\n      - block: b2\n        nodes: n[3-4]\n",
        "- topology: topo1\n  cluster_default: true\n"
        "  tree: {switches: [{switch: sw_root, children: \"s[1-2]\"},\n"
        "                    {switch: s1, nodes: \"node[01-02]\"},  # leaf\n"
        "                    {switch: s2, nodes: 'node[03-04]'}]}\n- {topology: topo2, cluster_default: false}\n",
        "---\n- topology: a\n  cluster_default: false\n  flat: true\n- topology: b\n  cluster_default: true\n"
        "  block:\n    block_sizes:\n      - 18\n    blocks: [{block: rack1, nodes: \"gb[001-018]\"}, "
        "{block: \"rack2\", nodes: [gb019, \"gb[020-036]\"]}]\n",
        "- topology: t\n  tree:\n    switches:\n      - switch: a\n        nodes: [n1, \"n[2-3]\"]\n"
        "      - switch: b\n        nodes:\n          - n4\n          - n[5-6]\n",
        "- topology: t\n  ring:\n    rings: [{ring: r0, nodes: \"n[1-8]\"}]\n",  // no islands
    };
    // Not YAML for libyaml either: both refuse.
    const std::vector<std::string> refused{"- topology: t\n  tree: {switches: [\n",
                                           "- topology: t\n  block: {blocks: [{block: b1 nodes: x]}\n"};
    const std::string dir = temp_dir();
    int n = 0;
    for (const auto& text : samples) {
        INFO("sample " << n << ":\n" << text);
        const std::string file = dir + "/s" + std::to_string(n++) + ".yaml";
        write_file(file, text);
        auto oracle = gputopo_test::run_cli("/usr/bin/python3", {script, file});
        REQUIRE(oracle.rc == 0);
        IslandMap map;
        parse_slurm_topology_yaml(text, file, map);
        std::istringstream lines(oracle.out);
        size_t islands = 0;
        for (std::string name, hosts; lines >> name >> hosts; ++islands) {
            const Hostlist h = Hostlist::parse(hosts);
            for (uint64_t i = 0; i < h.count(); ++i) {
                INFO(h.nth(i) << " in " << name);
                REQUIRE(map.find(h.nth(i)) != IslandMap::npos);
                CHECK(map.island(map.find(h.nth(i))).name == name);
            }
        }
        CHECK(map.size() == islands);
    }
    for (const auto& text : refused) {
        INFO(text);
        const std::string file = dir + "/r.yaml";
        write_file(file, text);
        CHECK(gputopo_test::run_cli("/usr/bin/python3", {script, file}).rc == 1);
        IslandMap map;
        CHECK_THROWS_AS(parse_slurm_topology_yaml(text, file, map), ParseError);
    }
    // A known difference, refused with the line named rather than read: anchors and aliases
    // ("&a" / "*a"), tags and multi-line scalars, which topology.yaml(5) does not use.
}

TEST_CASE("gputopo ranks reads Slurm's topology.yaml/topology.conf as the plugin does, --topology-conf takes YAML",
          "[islands][slurm-topology][cli]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string dir = temp_dir();
    write_file(dir + "/slurm.conf", "ClusterName=x\n");
    write_file(dir + "/topology.yaml",
               "- topology: t\n  cluster_default: true\n  block:\n    block_sizes: [2]\n"
               "    blocks: [{block: b1, nodes: \"n[1-2]\"}, {block: b2, nodes: \"n[3-4]\"}]\n");
    const std::vector<std::string> args{"ranks", "--nodes", "n[1-4]", "--tasks-per-node", "2", "--format", "json"};
    // What the plugin reads on a node of this cluster: the same islands.
    StepIslandMap plugin = load_step_islands("", dir);
    REQUIRE(plugin.map.size() == 2);
    setenv("SLURM_CONF", (dir + "/slurm.conf").c_str(), 1);
    gputopo_test::CliResult r = gputopo_test::run_cli(cli, args);
    gputopo_test::CliResult table = gputopo_test::run_cli(cli, {"ranks", "--nodes", "n[1-4]"});
    unsetenv("SLURM_CONF");
    REQUIRE(r.rc == 0);
    gputopo_test::JsonValue v = gputopo_test::JsonParser::parse(r.out);
    REQUIRE(v["nodes"].arr.size() == 4);
    for (size_t j = 0; j < 4; ++j) {
        const std::string node = v["nodes"][j]["node"].str;
        INFO(node);
        CHECK(v["nodes"][j]["island_known"].b);
        CHECK(v["nodes"][j]["island"].str == plugin.map.island(plugin.map.find(node)).name);
    }
    CHECK(table.out.find("(alone)") == std::string::npos);
    CHECK(table.out.find("in 2 islands (from Slurm's " + dir + "/topology.yaml)") != std::string::npos);

    // --topology-conf: a YAML file under any name, in place of Slurm's.
    write_file(dir + "/other", "# leaves\n- topology: t\n  tree:\n    switches:\n      - switch: leaf\n        nodes: n[1-4]\n");
    gputopo_test::CliResult other = gputopo_test::run_cli(cli, {"ranks", "--nodes", "n[1-4]", "--topology-conf", dir + "/other"});
    CHECK(other.rc == 0);
    CHECK(other.out.find("in 1 islands (from Slurm's " + dir + "/other)") != std::string::npos);
    // No Slurm topology: every node alone, and the line says so.
    const std::string empty = temp_dir();
    setenv("SLURM_CONF", (empty + "/slurm.conf").c_str(), 1);
    gputopo_test::CliResult none = gputopo_test::run_cli(cli, {"ranks", "--nodes", "n[1-2]"});
    unsetenv("SLURM_CONF");
    CHECK(none.out.find("n1 (alone)") != std::string::npos);
    CHECK(none.out.find("(from none)") != std::string::npos);
}

TEST_CASE("gputopo show/plan --node NAME read the topology file or cache the plugin's plugstack.conf names",
          "[cli][spank]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string fixture =
        gputopo_test::topology("nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml");
    const std::string dir = temp_dir();
    std::filesystem::create_directories(dir + "/plugstack.conf.d");
    std::filesystem::create_directories(dir + "/nodes");
    std::filesystem::copy_file(fixture, dir + "/nodes/gpu7.xml");
    write_file(dir + "/plugstack.conf", "# site plugins\ninclude plugstack.conf.d/*.conf\n");
    write_file(dir + "/plugstack.conf.d/gputopo.conf",
               "optional /usr/lib/x86_64-linux-gnu/slurm-wlm/gputopo.so topology=" + dir + "/nodes/%n.xml  # per node\n");
    setenv("SLURM_CONF", (dir + "/slurm.conf").c_str(), 1);
    auto by_node = gputopo_test::run_cli(cli, {"plan", "--node", "gpu7", "--format", "json"});
    auto missing = gputopo_test::run_cli(cli, {"show", "--node", "gpu8"});
    auto both = gputopo_test::run_cli(cli, {"show", "--node", "gpu7", "--topology", fixture});
    // cache=: the node's NAME.xml in the cache directory.
    write_file(dir + "/plugstack.conf.d/gputopo.conf", "required gputopo.so cache=" + dir + "/nodes\n");
    auto cached = gputopo_test::run_cli(cli, {"plan", "--node", "gpu7", "--format", "json"});
    write_file(dir + "/plugstack.conf.d/gputopo.conf", "optional /x/gputopo.so default=closest\n");
    auto live_only = gputopo_test::run_cli(cli, {"show", "--node", "gpu7"});
    std::filesystem::remove(dir + "/plugstack.conf.d/gputopo.conf");
    auto no_line = gputopo_test::run_cli(cli, {"show", "--node", "gpu7"});
    setenv("SLURM_CONF", (dir + "/nowhere/slurm.conf").c_str(), 1);
    auto no_file = gputopo_test::run_cli(cli, {"show", "--node", "gpu7"});
    unsetenv("SLURM_CONF");
    auto by_file = gputopo_test::run_cli(cli, {"plan", "--topology", fixture, "--format", "json"});
    REQUIRE(by_file.rc == 0);
    CHECK(by_node.rc == 0);
    CHECK(by_node.out == by_file.out);
    CHECK(cached.rc == 0);
    CHECK(cached.out == by_file.out);
    CHECK(missing.rc == 1);
    CHECK(missing.err.find(dir + "/nodes/gpu8.xml") != std::string::npos);
    CHECK(both.rc == 2);
    CHECK(live_only.rc == 1);
    CHECK(live_only.err.find("neither topology= nor cache=") != std::string::npos);
    CHECK(no_line.rc == 1);
    CHECK(no_line.err.find(dir + "/plugstack.conf loads no gputopo.so") != std::string::npos);
    CHECK(no_file.rc == 1);
    CHECK(no_file.err.find(dir + "/nowhere/plugstack.conf does not exist") != std::string::npos);
}

TEST_CASE("islands without islands=: Slurm's config dir, topology.yaml before topology.conf, islands= adds",
          "[islands][slurm-topology]") {
    CHECK(slurm_config_dir(env_of({{"SLURM_CONF", "/var/spool/slurmd/conf-cache/slurm.conf"}})) ==
          "/var/spool/slurmd/conf-cache");
    CHECK(slurm_config_dir(env_of({})) == "/etc/slurm");

    const std::string dir = temp_dir();
    CHECK(slurm_topology_file(dir).empty());
    CHECK(load_step_islands("", dir).sources == "none");
    write_file(dir + "/topology.conf", "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n"
                                       "SwitchName=spine Switches=leaf[1-2]\n");
    StepIslandMap only = load_step_islands("", dir);
    CHECK(only.sources == "Slurm's " + dir + "/topology.conf");
    CHECK(only.map.island(only.map.find("n3")).name == "leaf2");

    // islands= adds and overrides: pod1 for n[1-2], leaf2 from Slurm for n[3-4].
    write_file(dir + "/gputopo.conf", "Island=pod1 Nodes=n[1-2]\n");
    StepIslandMap both = load_step_islands(dir + "/gputopo.conf", dir);
    CHECK(both.map.island(both.map.find("n1")).name == "pod1");
    CHECK(both.map.island(both.map.find("n4")).name == "leaf2");
    CHECK(both.sources.find("gputopo.conf") != std::string::npos);
    CHECK(both.sources.find("Slurm's") != std::string::npos);

    // TopologyConf= in gputopo.conf replaces Slurm's own file.
    write_file(dir + "/other.conf", "SwitchName=x Nodes=n[1-4]\n");
    write_file(dir + "/gputopo2.conf", "TopologyConf=other.conf\n");
    StepIslandMap named = load_step_islands(dir + "/gputopo2.conf", dir);
    CHECK(named.map.island(named.map.find("n3")).name == "x");
    CHECK(named.sources.find("Slurm's") == std::string::npos);

    // topology.yaml is read before topology.conf (Slurm 25.05+).
    write_file(dir + "/topology.yaml", "- topology: t\n  cluster_default: true\n  tree:\n    switches:\n"
                                       "      - switch: y1\n        nodes: n[1-4]\n");
    CHECK(slurm_topology_file(dir) == dir + "/topology.yaml");
    CHECK(load_step_islands("", dir).map.island(load_step_islands("", dir).map.find("n2")).name == "y1");
    std::filesystem::remove_all(dir);
}

TEST_CASE("gputopo plan accepts an empty allocation: --gpus '' and --gpus none", "[slurm-gpu-bind][cli]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kXe8640);
    Node node = load_topology_file(topo);
    for (const char* empty : {"", "none"}) {
        INFO("--gpus '" << empty << "'");
        gputopo_test::CliResult r =
            gputopo_test::run_cli(cli, {"plan", "--topology", topo, "--gpus", empty, "--ntasks", "2", "--format", "json"});
        INFO(r.err);
        REQUIRE(r.rc == 0);
        gputopo_test::JsonValue v = gputopo_test::JsonParser::parse(r.out);
        REQUIRE(v["tasks"].arr.size() == 2);
        CpuSet all;
        for (size_t t = 0; t < 2; ++t) {
            CHECK(v["tasks"][t]["gpus"].ints().empty());
            CpuSet c = CpuSet::parse_list(v["tasks"][t]["cpus"].str);
            CHECK_FALSE(c.intersects(all));
            all |= c;
        }
        CHECK(all == node.cpus);  // CPU-only tasks split the node's CPUs
    }
}

TEST_CASE("MIG instances survive the plugin's cache (node snapshot) and still resolve", "[slurm-uuid]") {
    Node node = h200_with_mig();
    Node back = read_node_snapshot(write_node_snapshot(node), "snapshot");
    REQUIRE(back.gpus.size() == node.gpus.size());
    for (size_t i = 0; i < node.gpus.size(); ++i) CHECK(back.gpus[i].mig_uuids == node.gpus[i].mig_uuids);
    for (const auto& [bus, ids] : fixture_migs("hgx-h200-mig.nvml"))
        for (const std::string& id : ids) CHECK(back.gpu(parent_gpu(back, id))->pci.to_string() == bus);
}

TEST_CASE("the GPUs Slurm gave a task: SLURM_STEP_GPUS, or narrower visible devices", "[slurm-gpu-bind]") {
    StepInputs step;
    step.gpus = {2, 3, 5, 7};
    // 22.05: both narrowed per task (SLURM_STEP_GPUS=3, CUDA_VISIBLE_DEVICES=3).
    CHECK(task_gpus_from_slurm(env_of({{"SLURM_STEP_GPUS", "3"}, {"CUDA_VISIBLE_DEVICES", "3"}}), step) ==
          std::vector<int>{3});
    // Only the visible devices narrowed: they win.
    CHECK(task_gpus_from_slurm(env_of({{"SLURM_STEP_GPUS", "2,3,5,7"}, {"CUDA_VISIBLE_DEVICES", "5"}}), step) ==
          std::vector<int>{5});
    // ... numbered relative to the step (cgroup ConstrainDevices): position 2 of 2,3,5,7 is GPU 5.
    step.relative_numbering = true;
    CHECK(task_gpus_from_slurm(env_of({{"SLURM_STEP_GPUS", "2,3,5,7"}, {"CUDA_VISIBLE_DEVICES", "2"}}), step) ==
          std::vector<int>{5});
    // Same size: SLURM_STEP_GPUS (global indices) is the answer.
    CHECK(task_gpus_from_slurm(env_of({{"SLURM_STEP_GPUS", "7"}, {"CUDA_VISIBLE_DEVICES", "0"}}), step) ==
          std::vector<int>{7});
    // --gpu-bind=none on 22.05: Slurm sets neither.
    CHECK(task_gpus_from_slurm(env_of({}), step).empty());
}

// Slurm 26.05 gres.conf Flags=env_uuid: whole GPUs named by UUID in CUDA_VISIBLE_DEVICES. UUIDs stay
// UUIDs, and share and isolate hold as they do for indices: share, every step GPU's UUID (position
// = local task id holds that task's GPU) even where Slurm narrowed the task to its own (--gpus-per-task
// without a cgroup of its own); isolate, the task's own UUID alone even where Slurm gave every task all.
TEST_CASE("env_uuid: share and isolate hold with GPU UUIDs", "[slurm-uuid][env-uuid]") {
    Node node = h200_with_mig();
    std::vector<std::string> uuids;
    for (const Gpu& g : node.gpus) uuids.push_back(g.uuid);
    REQUIRE(uuids.size() == 8);
    const std::string all4 = uuids[0] + "," + uuids[1] + "," + uuids[2] + "," + uuids[3];
    const Getenv step_env = env_of({{"SLURM_STEP_GPUS", "0,1,2,3"}, {"CUDA_VISIBLE_DEVICES", all4}});
    auto uuid_of_task = [&](const StepBinding& sb, int t) {
        return uuids[static_cast<size_t>(sb.plan().tasks[static_cast<size_t>(t)].gpus.at(0))];
    };
    SECTION("share, --gpus-per-task=1, no per-task cgroup: all four UUIDs, the task's at its position") {
        for (const char* opts : {"closest,share", "closest"}) {
            const StepBinding sb = binding_of(node, step_env, opts, 4, false, "n1");
            for (int t = 0; t < 4; ++t) {
                INFO(opts << " task " << t);
                TaskAction a = sb.task(t, env_of({{"CUDA_VISIBLE_DEVICES", uuids[static_cast<size_t>(t)]},
                                                  {"SLURMD_TRES_BIND", "gpu:per_task:1"}}));
                const std::vector<std::string> seen = split_device_uuids(set_of(a)["CUDA_VISIBLE_DEVICES"]);
                CHECK(seen.size() == 4);
                CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 4);
                REQUIRE(seen.size() > static_cast<size_t>(t));
                CHECK(seen[static_cast<size_t>(t)] == uuid_of_task(sb, t));
            }
        }
    }
    SECTION("isolate, --gpus-per-node=4: the task's own UUID alone") {
        const StepBinding sb = binding_of(node, step_env, "closest,isolate", 4, false, "n1");
        for (int t = 0; t < 4; ++t) {
            TaskAction a = sb.task(t, env_of({{"CUDA_VISIBLE_DEVICES", all4}}));
            CHECK(set_of(a)["CUDA_VISIBLE_DEVICES"] == uuid_of_task(sb, t));
        }
    }
    SECTION("ConstrainDevices: a per-task cgroup keeps the task's UUID; allow-task-sharing opens the step's") {
        StepSetup setup;
        setup.env = step_env;
        setup.options = parse_gpu_topo("closest,share");
        setup.node_name = "n1";
        setup.local_tasks = 4;
        setup.affinity = node.cpus;
        setup.devices_constrained = true;
        const StepBinding sb(setup, node);
        const Getenv task1 =
            env_of({{"CUDA_VISIBLE_DEVICES", uuids[1]}, {"SLURMD_TRES_BIND", "gpu:per_task:1"}});
        CHECK(set_of(sb.task(1, task1, nullptr, 1))["CUDA_VISIBLE_DEVICES"] == uuids[1]);
        CHECK(set_of(sb.task(1, task1))["CUDA_VISIBLE_DEVICES"] == uuids[1]);
        const std::vector<std::string> shared = split_device_uuids(set_of(sb.task(1, task1, nullptr, 4))["CUDA_VISIBLE_DEVICES"]);
        CHECK(shared.size() == 4);
        REQUIRE(shared.size() > 1);
        CHECK(shared[1] == uuid_of_task(sb, 1));
    }
}
