// Slurm's device scope under ConstrainDevices (step/device_scope.hpp): which
// physical GPUs each task holds by Slurm's own rule, and what the one step
// binding (plugin and launcher alike) makes of it: a task is never handed a
// GPU outside its own cgroup, and sees its GPUs as 0..k-1. Expected answers
// are computed here from the rule's definition, not from gputopo's code.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "launcher/env/binding.hpp"
#include "step/device_probe.hpp"
#include "step/device_scope.hpp"
#include "step/step_binding.hpp"
#include "tests/unit/env_map.hpp"
#include "tests/unit/fixtures.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/topology_loader.hpp"
#include "topo/core/host.hpp"

using namespace gputopo;
using namespace gputopo::step;

namespace {

using gputopo_test::Env;
using gputopo_test::env_of;

std::string join(const std::vector<int>& v) {
    std::string out;
    for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
    return out;
}

std::vector<int> split_ints(const std::string& s) {
    std::vector<int> out;
    size_t at = 0;
    while (at < s.size()) {
        size_t comma = s.find(',', at);
        out.push_back(std::stoi(s.substr(at, comma == std::string::npos ? std::string::npos : comma - at)));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return out;
}

std::optional<std::string> value_of(const std::vector<EnvVar>& env, const std::string& name) {
    for (const auto& v : env)
        if (v.name == name) return v.value;
    return std::nullopt;
}

Node oci() {
    return load_topology_file(
        gputopo_test::topology("nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml"));
}

const std::vector<CpuSet> kNoCpus;

// A step on `node` as slurmstepd's user_init sees it under ConstrainDevices, on the host the
// topology describes.
StepSetup constrained_setup(const Node& node, const std::string& step_gpus, const std::string& visible,
                            const std::string& options, int tasks) {
    StepSetup setup;
    setup.env = env_of({{"SLURM_STEP_GPUS", step_gpus}, {"CUDA_VISIBLE_DEVICES", visible}});
    setup.options = parse_gpu_topo(options);
    setup.node_name = "n";
    setup.local_tasks = tasks;
    setup.host_cpus = node.cpus;
    setup.affinity = node.cpus;
    setup.devices_constrained = true;
    return setup;
}

}  // namespace

TEST_CASE("Slurm's GPU binding as slurmstepd writes it in SLURMD_TRES_BIND", "[device_scope]") {
    CHECK(parse_slurm_gpu_bind("gpu:per_task:2").kind == SlurmGpuBind::Kind::PerTask);
    CHECK(parse_slurm_gpu_bind("gpu:per_task:2").count == 2);
    CHECK(parse_slurm_gpu_bind("gres/gpu:map_gpu:3,2").kind == SlurmGpuBind::Kind::MapGpu);
    CHECK(parse_slurm_gpu_bind("gres/gpu:map_gpu:3,2").list == "3,2");
    CHECK(parse_slurm_gpu_bind("gres/gpu:verbose,mask_gpu:0x3,0xc").kind == SlurmGpuBind::Kind::MaskGpu);
    CHECK(parse_slurm_gpu_bind("gres/gpu:map:1").kind == SlurmGpuBind::Kind::MapGpu);  // 24.11 spelling
    CHECK(parse_slurm_gpu_bind("gpu:closest").kind == SlurmGpuBind::Kind::Closest);
    CHECK(parse_slurm_gpu_bind("gpu:single:2").count == 2);
    CHECK(parse_slurm_gpu_bind("gres/gpu:per_task:1+gres/nic:closest").count == 1);
    for (const char* none : {"", "gpu:none", "gpu:per_task:0", "gpu:per_task:x", "gres/nic:closest", "nonsense"})
        CHECK_FALSE(parse_slurm_gpu_bind(none).per_task());
}

TEST_CASE("per_task:N: blocks of the step's GPUs before 23.11, nearest free GPUs first from 23.11", "[device_scope]") {
    const std::vector<int> step = {3, 4, 5, 6};  // part of a node: another job holds 0-2
    const SlurmGpuBind two = parse_slurm_gpu_bind("gpu:per_task:2");
    CHECK(slurm_task_gpus(two, step, 0, true, nullptr, kNoCpus) == std::vector<int>{3, 4});
    CHECK(slurm_task_gpus(two, step, 1, true, nullptr, kNoCpus) == std::vector<int>{5, 6});
    CHECK(per_task_rule_for(0x160508) == PerTaskRule::Blocks);        // 22.05.8
    CHECK(per_task_rule_for(0x170b01) == PerTaskRule::NearestFirst);  // 23.11.1
    CHECK(per_task_rule_for(0x180b05) == PerTaskRule::NearestFirst);  // 24.11.5

    // 23.11+: a task placed on the second socket takes the GPUs near it first.
    Node node = oci();
    REQUIRE(node.gpus.size() == 8);
    const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
    std::vector<CpuSet> cpus = {node.gpus[7].local_cpus, node.gpus[0].local_cpus};
    REQUIRE_FALSE(cpus[0].empty());
    REQUIRE_FALSE(node.gpus[7].local_cpus.intersects(node.gpus[0].local_cpus));
    const SlurmGpuBind one = parse_slurm_gpu_bind("gpu:per_task:1");
    auto t0 = slurm_task_gpus(one, all, 0, true, &node, cpus, PerTaskRule::NearestFirst);
    auto t1 = slurm_task_gpus(one, all, 1, true, &node, cpus, PerTaskRule::NearestFirst);
    REQUIRE(t0);
    REQUIRE(t1);
    CHECK(node.gpus[static_cast<size_t>(t0->front())].local_cpus == node.gpus[7].local_cpus);
    CHECK(node.gpus[static_cast<size_t>(t1->front())].local_cpus == node.gpus[0].local_cpus);
    // The same two tasks under the 22.05 rule: blocks, whatever the CPUs.
    CHECK(slurm_task_gpus(one, all, 0, true, &node, cpus, PerTaskRule::Blocks) == std::vector<int>{0});
}

TEST_CASE("map_gpu/mask_gpu: positions in the step's GPUs when constrained, GPU indices when not", "[device_scope]") {
    const std::vector<int> step = {4, 5, 6, 7};
    const SlurmGpuBind map = parse_slurm_gpu_bind("gpu:map_gpu:3,2*2,0");
    CHECK(slurm_task_gpus(map, step, 0, true, nullptr, kNoCpus) == std::vector<int>{7});
    CHECK(slurm_task_gpus(map, step, 1, true, nullptr, kNoCpus) == std::vector<int>{6});
    CHECK(slurm_task_gpus(map, step, 2, true, nullptr, kNoCpus) == std::vector<int>{6});
    CHECK(slurm_task_gpus(map, step, 3, true, nullptr, kNoCpus) == std::vector<int>{4});
    CHECK(slurm_task_gpus(map, step, 4, true, nullptr, kNoCpus) == std::vector<int>{7});  // the list cycles
    // Not constrained: the values are GPU indices; one outside the step gives the first.
    CHECK(slurm_task_gpus(parse_slurm_gpu_bind("gpu:map_gpu:5"), step, 0, false, nullptr, kNoCpus) ==
          std::vector<int>{5});
    CHECK(slurm_task_gpus(parse_slurm_gpu_bind("gpu:map_gpu:1"), step, 0, false, nullptr, kNoCpus) ==
          std::vector<int>{4});
    const SlurmGpuBind mask = parse_slurm_gpu_bind("gpu:mask_gpu:0x3,0xc");
    CHECK(slurm_task_gpus(mask, step, 0, true, nullptr, kNoCpus) == std::vector<int>{4, 5});
    CHECK(slurm_task_gpus(mask, step, 1, true, nullptr, kNoCpus) == std::vector<int>{6, 7});
    CHECK_FALSE(slurm_task_gpus(parse_slurm_gpu_bind("gpu:map_gpu:x"), step, 0, true, nullptr, kNoCpus));
}

TEST_CASE("closest and single: the step's GPUs near the task's CPUs", "[device_scope]") {
    Node node = oci();
    const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
    std::vector<int> near7;
    for (int g : all)
        if (node.gpus[static_cast<size_t>(g)].local_cpus.intersects(node.gpus[7].local_cpus)) near7.push_back(g);
    std::vector<CpuSet> cpus = {node.gpus[7].local_cpus, node.gpus[7].local_cpus};
    CHECK(slurm_task_gpus(parse_slurm_gpu_bind("gpu:closest"), all, 0, true, &node, cpus) == near7);
    // single:1 keeps one of them, the (task / 1)-th.
    CHECK(slurm_task_gpus(parse_slurm_gpu_bind("gpu:single:1"), all, 1, true, &node, cpus) ==
          std::vector<int>{near7[1]});
    CHECK_FALSE(slurm_task_gpus(parse_slurm_gpu_bind("gpu:closest"), all, 0, true, nullptr, cpus));
}

TEST_CASE("task/affinity's per-task CPUs from SLURM_CPU_BIND_TYPE and _LIST", "[device_scope]") {
    auto c = task_cpus_from_slurm(std::string("mask_cpu:"), std::string("0x1,0x6"), 3);
    REQUIRE(c.size() == 3);
    CHECK(c[0].to_list() == "0");
    CHECK(c[1].to_list() == "1-2");
    CHECK(c[2].to_list() == "0");  // a shorter list cycles, as Slurm applies it
    auto m = task_cpus_from_slurm(std::string("map_cpu:"), std::string("5,3"), 2);
    CHECK(m[1].to_list() == "3");
    CHECK(task_cpus_from_slurm(std::string("none"), std::string(""), 2)[0].empty());
    CHECK(task_cpus_from_slurm(std::string("mask_cpu:"), std::string("0xZZ"), 2)[0].empty());
}

TEST_CASE("cgroup.conf: ConstrainDevices=yes", "[device_scope]") {
    CHECK(cgroup_conf_constrains_devices("CgroupPlugin=cgroup/v1\nConstrainDevices=yes\n"));
    CHECK(cgroup_conf_constrains_devices("constraindevices=YES # comment"));
    CHECK(cgroup_conf_constrains_devices("ConstrainCores=yes ConstrainDevices=yes"));
    CHECK_FALSE(cgroup_conf_constrains_devices("ConstrainDevices=no\n"));
    CHECK_FALSE(cgroup_conf_constrains_devices("#ConstrainDevices=yes\n"));
    CHECK_FALSE(cgroup_conf_constrains_devices("ConstrainDevicesX=yes\n"));
    CHECK_FALSE(cgroup_conf_constrains_devices(""));
    CHECK_FALSE(slurm_constrains_devices("/nonexistent-dir"));
}

TEST_CASE("cgroup.conf read as Slurm reads it: spaces around '=', quotes, its booleans (issue 33, finding 7)",
          "[device_scope]") {
    // Slurm's parse_config.c: "[[:space:]]*KEY[[:space:]]*=[[:space:]]*(\"...\"|VALUE)"; s_p_handle_boolean.
    for (const char* on : {"ConstrainDevices = yes\n", "ConstrainDevices= yes\n", "ConstrainDevices =yes\n",
                           "ConstrainDevices=\"yes\"\n", "  ConstrainDevices\t=\tYes  # on\n", "ConstrainDevices=true\n",
                           "ConstrainDevices=1\n", "ConstrainDevices=up\n",
                           "ConstrainCores = yes ConstrainDevices = yes ConstrainRAMSpace = no\n",
                           "ConstrainDevices=no\nConstrainDevices = yes\n"}) {
        INFO(on);
        CHECK(cgroup_conf_constrains_devices(on));
    }
    for (const char* off : {"ConstrainDevices = no\n", "ConstrainDevices=\"no\"\n", "ConstrainDevices=yesplease\n",
                            "ConstrainDevices=yes\nConstrainDevices = false\n", "ConstrainDevices=0\n",
                            "ConstrainDevices=yes ConstrainCores\n"}) {  // the last: a line Slurm refuses
        INFO(off);
        CHECK_FALSE(cgroup_conf_constrains_devices(off));
    }
}

// Every shipped topology with two or more GPUs, per_task:N with N = 1 and 2, the
// whole node or its upper half, under ConstrainDevices: each task's
// CUDA_VISIBLE_DEVICES counts 0..N-1, GPUTOPO_GPUS is the block Slurm's rule
// gives it, no variable names a GPU outside that block, and its CPUs lie in the
// CPUs local to its GPUs whenever the plan could keep them local. The launcher's
// path, given the step's GPUs, gives the same action.
TEST_CASE("a 1M-bit --cpu-bind mask is not copied per task per task before the fork (issue 33, finding 11)",
          "[device_scope]") {
    using clock = std::chrono::steady_clock;
    const Node node = oci();
    StepInputs in;
    for (int g = 0; g < 8; ++g) in.gpus.push_back(g);
    // A user-controlled mask of 2^20 bits (262,144 hex digits), the same for every task.
    const std::string mask = "0x" + std::string(262143, '0') + "1";
    for (const char* bind : {"gpu:per_task:1", "gpu:closest", "gpu:map_gpu:0,1"}) {
        for (PerTaskRule rule_kind : {PerTaskRule::Blocks, PerTaskRule::NearestFirst}) {
            INFO(bind << (rule_kind == PerTaskRule::Blocks ? " blocks" : " nearest first"));
            DeviceRule rule;
            rule.local_tasks = 256;
            rule.constrained = true;
            rule.per_task = rule_kind;
            const Env env = {{"SLURMD_TRES_BIND", bind}, {"SLURM_CPU_BIND_TYPE", "mask_cpu:"},
                             {"SLURM_CPU_BIND_LIST", mask}, {"CUDA_VISIBLE_DEVICES", "0"}};
            const Getenv get = env_of(env);
            const auto t0 = clock::now();
            SlurmDevices first;
            for (int t = 0; t < rule.local_tasks; ++t) {
                SlurmDevices d = slurm_devices(node, in, rule, t, get, nullptr);
                if (t == 0) first = d;
            }
            const double took = std::chrono::duration<double>(clock::now() - t0).count();
            // 256 tasks: 31 s before (the mask copied 256 x 256 times); 0.3 s now at -O2, 3.5 s
            // under ASan+UBSan on this 2-core machine: 10 s tells the two apart in both builds.
            CHECK(took < 10.0);
            if (std::string(bind) == "gpu:per_task:1") CHECK(first.gpus == std::vector<int>{0});
        }
    }
    // The sets are cut to the node's CPUs: CPU 0 stays, the 2^20th bit (no such CPU) goes.
    const CpuSet cpus = node.cpus;
    auto cut = task_cpus_from_slurm(std::string("mask_cpu:"), "0x1" + std::string(262143, '0') + ",0x1", 2, &cpus);
    CHECK(cut[0].empty());
    CHECK(cut[1].to_list() == "0");
}

TEST_CASE("ConstrainDevices + per-task binding on every fixture: each task binds around the GPUs it holds",
          "[device_scope][fixtures]") {
    int checked = 0;
    for (const std::string& rel : gputopo_test::topology_files()) {
        Node node;
        try {
            node = load_topology_file(gputopo_test::topology(rel));
        } catch (const std::exception&) {
            continue;  // partial files the loader refuses (test_topology_loader covers them)
        }
        const int n = static_cast<int>(node.gpus.size());
        if (n < 2) continue;
        for (int per : {1, 2}) {
            for (bool half : {false, true}) {
                std::vector<int> step;
                for (int g = half ? n / 2 : 0; g < n; ++g) step.push_back(g);
                const int tasks = static_cast<int>(step.size()) / per;
                if (tasks < 1) continue;
                const StepSetup setup = constrained_setup(node, join(step), join(step), "closest", tasks);
                StepBinding binding(setup, node);
                std::set<int> seen;
                for (int t = 0; t < tasks; ++t) {
                    std::vector<int> held(step.begin() + t * per, step.begin() + (t + 1) * per);
                    std::vector<int> local;
                    for (int i = 0; i < per; ++i) local.push_back(i);
                    const Env task_env = {{"SLURMD_TRES_BIND", "gpu:per_task:" + std::to_string(per)},
                                          {"CUDA_VISIBLE_DEVICES", join(local)},
                                          {"SLURM_STEP_GPUS", join(local)}};
                    INFO(rel << " per_task:" << per << (half ? " upper half" : " whole node") << " task " << t);
                    REQUIRE(binding.task_scope_is_own(std::string("gpu:per_task:" + std::to_string(per))));
                    TaskAction a = binding.task(t, env_of(task_env));
                    auto cvd = value_of(a.set, "CUDA_VISIBLE_DEVICES");
                    auto rocr = value_of(a.set, "ROCR_VISIBLE_DEVICES");
                    const std::string visible = cvd ? *cvd : std::string();
                    if (node.gpus[0].vendor == Vendor::Amd) {
                        REQUIRE(rocr);
                        std::vector<int> r = split_ints(*rocr);
                        std::sort(r.begin(), r.end());
                        CHECK(r == local);
                    } else {
                        REQUIRE(cvd);
                        std::vector<int> v = split_ints(visible);
                        std::sort(v.begin(), v.end());
                        CHECK(v == local);
                    }
                    auto gpus = value_of(a.set, "GPUTOPO_GPUS");
                    REQUIRE(gpus);
                    std::vector<int> g = split_ints(*gpus);
                    std::sort(g.begin(), g.end());
                    CHECK(g == held);
                    for (int x : g) CHECK(seen.insert(x).second);  // no two tasks hold one GPU
                    CHECK(value_of(a.set, "GPUTOPO_STEP_GPUS") == std::optional<std::string>(join(step)));
                    // Its CPUs are near its own GPUs when they have a known locality and
                    // the plan had whole cores enough for every task there.
                    CpuSet near;
                    for (int x : held) near |= node.gpus[static_cast<size_t>(x)].local_cpus;
                    if (!near.empty() && !a.cpus.empty() && near.count() >= tasks) CHECK(near.contains(a.cpus));
                    // The launcher, told the step's GPUs, makes the same action.
                    Env launcher_env = task_env;
                    launcher_env["SLURM_LOCALID"] = std::to_string(t);
                    launcher_env["SLURM_NODEID"] = "0";
                    launcher_env["SLURM_STEP_TASKS_PER_NODE"] = std::to_string(tasks);
                    launcher_env["SLURMD_NODENAME"] = "n";
                    const Getenv le = env_of(launcher_env);
                    const launch::TaskPlace place = launch::read_task_place(le, gputopo::host_name());
                    TaskAction l = launch::binding_for(node, setup.options, le, place, true, step, node.cpus,
                                                       node.cpus, true);
                    CHECK(value_of(l.set, "GPUTOPO_GPUS") == gpus);
                    CHECK(value_of(l.set, "CUDA_VISIBLE_DEVICES") == cvd);
                    CHECK(l.cpus == a.cpus);
                    ++checked;
                }
            }
        }
    }
    CHECK(checked > 50);
}

TEST_CASE("devices constrained, no per-task binding: the step's GPUs numbered 0..k-1 in the step's cgroup",
          "[device_scope]") {
    Node node = oci();
    StepBinding b(constrained_setup(node, "4,5,6,7", "0,1,2,3", "closest", 2), node);
    CHECK_FALSE(b.task_scope_is_own(std::string("gpu:none")));
    CHECK_FALSE(b.task_scope_is_own(std::nullopt));
    std::set<std::string> seen;
    for (int t = 0; t < 2; ++t) {
        TaskAction a = b.task(t, env_of({}));
        auto cvd = value_of(a.set, "CUDA_VISIBLE_DEVICES");
        REQUIRE(cvd);
        for (int v : split_ints(*cvd)) CHECK((v >= 0 && v < 4));
        auto g = value_of(a.set, "GPUTOPO_GPUS");
        REQUIRE(g);
        for (int v : split_ints(*g)) CHECK((v >= 4 && v < 8));
    }
}

TEST_CASE("share under per-task device cgroups: one line says it cannot be, tasks stay on their own GPUs",
          "[device_scope]") {
    Node node = oci();
    StepBinding b(constrained_setup(node, "0,1", "0,1", "closest,share", 2), node);
    TaskAction a = b.task(1, env_of({{"SLURMD_TRES_BIND", "gpu:per_task:1"}, {"CUDA_VISIBLE_DEVICES", "0"}}));
    CHECK(value_of(a.set, "CUDA_VISIBLE_DEVICES") == std::optional<std::string>("0"));
    CHECK(value_of(a.set, "GPUTOPO_GPUS") == std::optional<std::string>("1"));
    TaskAction first = b.task(0, env_of({{"SLURMD_TRES_BIND", "gpu:per_task:1"}, {"CUDA_VISIBLE_DEVICES", "0"}}));
    bool said = false;
    for (const auto& n : first.warnings) said = said || n.find("share is not possible") != std::string::npos;
    CHECK(said);
    // Slurm gave the task more GPUs than its rule says: devices kept as Slurm set them.
    TaskAction odd = b.task(1, env_of({{"SLURMD_TRES_BIND", "gpu:per_task:1"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}));
    CHECK_FALSE(value_of(odd.set, "CUDA_VISIBLE_DEVICES"));
    CHECK_FALSE(value_of(odd.set, "GPUTOPO_GPUS"));
    CHECK_THAT(odd.kept_note, Catch::Contains("devices kept as Slurm set them"));
}

TEST_CASE("-c N: each task gets N CPUs of its share, whole cores first, never fewer", "[device_scope][planner]") {
    int checked = 0;
    for (const std::string& rel : gputopo_test::topology_files()) {
        Node node;
        try {
            node = load_topology_file(gputopo_test::topology(rel));
        } catch (const std::exception&) {
            continue;  // partial files the loader refuses (test_topology_loader covers them)
        }
        if (node.gpus.size() < 2 || node.cores.empty()) continue;
        const int smt = node.cores.front().pus.count();
        PlanRequest r;
        r.gpus = {0, 1};
        r.ntasks = 2;
        const Plan whole_share = make_plan(node, r);
        r.cpus_per_task = 2 * smt;
        const Plan p = make_plan(node, r);
        for (const TaskBinding& t : p.tasks) {
            INFO(rel << " task " << t.task);
            const CpuSet& share = whole_share.tasks[static_cast<size_t>(t.task)].cpus;
            // Never fewer than asked (issue 34): a smaller share is kept whole and grows.
            const bool enough = share.count() >= 2 * smt;
            CHECK((enough ? share.contains(t.cpus) : t.cpus.contains(share)));
            CHECK(t.cpus.count() == 2 * smt);
            int whole_in_share = 0, whole = 0;
            for (const Core& c : node.cores) {
                if (share.contains(c.pus)) ++whole_in_share;
                if (t.cpus.contains(c.pus)) ++whole;
            }
            if (enough) CHECK(whole == std::min(2, whole_in_share));  // whole cores, not half ones
            ++checked;
        }
        CHECK_FALSE(p.tasks[0].cpus.intersects(p.tasks[1].cpus));
    }
    CHECK(checked > 10);
}

TEST_CASE("what the task can open decides its device scope: own GPUs, or the step's (allow-task-sharing)",
          "[device_scope][allow-task-sharing]") {
    // Counted in the task: one file open to it of a step of four -> its own cgroup.
    CHECK_FALSE(task_opens_step_gpus(1, 1, 4, std::string("0")));
    // --gres-flags=allow-task-sharing: the step's four are open to every task.
    CHECK(task_opens_step_gpus(4, 1, 4, std::string("0")));
    CHECK(task_opens_step_gpus(4, 2, 4, std::string("0,1")));
    // Not counted (no device files here): Slurm's own numbering says it. A per-task
    // cgroup numbers the task's GPUs 0..k-1; allow-task-sharing gives task 2 "2".
    CHECK(task_opens_step_gpus(std::nullopt, 1, 4, std::string("2")));
    CHECK(task_opens_step_gpus(0, 2, 4, std::string("2,3")));
    CHECK_FALSE(task_opens_step_gpus(std::nullopt, 1, 2, std::string("0,1")));  // another count: kept as Slurm set it
    CHECK_FALSE(task_opens_step_gpus(std::nullopt, 1, 4, std::string("0")));
    CHECK_FALSE(task_opens_step_gpus(std::nullopt, 1, 4, std::nullopt));
    CHECK_FALSE(task_opens_step_gpus(std::nullopt, 1, 4, std::string("GPU-8a4c1e0b-1111-2222-3333-444455556666")));
    // A task that holds every GPU of the step: both scopes are one.
    CHECK_FALSE(task_opens_step_gpus(4, 4, 4, std::string("0,1,2,3")));
}

TEST_CASE("GPU device files: nvidiaN and renderDN counted, control files not", "[device_scope][allow-task-sharing]") {
    char tmpl[] = "/tmp/gputopo-devs-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl;
    for (const char* f : {"nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia-caps", "renderD128",
                          "card0", "nvidia"})
        std::ofstream(dir + "/" + f) << "";
    auto files = probe_gpu_device_files(dir);
    REQUIRE(files);
    CHECK(files->present == 4);
    CHECK(files->openable == 4);  // regular files: nothing refuses them
    CHECK(openable_gpu_count(dir) == std::optional<int>(4));
    CHECK_FALSE(probe_gpu_device_files(dir + "/none"));
    for (const char* f : {"nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia-caps", "renderD128",
                          "card0", "nvidia"})
        std::remove((dir + "/" + f).c_str());
    CHECK_FALSE(openable_gpu_count(dir));
    rmdir(dir.c_str());
}

// Slurm 23.11+ --gpus-per-task=1 --gres-flags=allow-task-sharing under ConstrainDevices (seen on 26.05):
// every task can open the step's GPUs and Slurm sets task i's CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS
// to i, its position in the step's set. Each task must see its planned GPU under the numbering of the
// step's cgroup (0..3), never GPU 0 for all; isolate: that one alone; share: all four. The launcher
// makes the same action from the task's own environment.
TEST_CASE("allow-task-sharing: each task's planned GPU in the step's numbering, share and isolate hold",
          "[device_scope][allow-task-sharing]") {
    Node node = oci();
    const std::string step = "4,5,6,7";
    for (const std::string options : {"closest", "closest,isolate", "closest,share"}) {
        StepBinding b(constrained_setup(node, step, "0,1,2,3", options, 4), node);
        REQUIRE(b.task_scope_is_own(std::string("gpu:per_task:1")));
        std::set<int> physical;
        for (int t = 0; t < 4; ++t) {
            INFO(options << " task " << t);
            const Env task_env = {{"SLURMD_TRES_BIND", "gpu:per_task:1"},
                                  {"CUDA_VISIBLE_DEVICES", std::to_string(t)},
                                  {"SLURM_STEP_GPUS", std::to_string(t)}};
            for (std::optional<int> openable : {std::optional<int>(4), std::optional<int>()}) {
                TaskAction a = b.task(t, env_of(task_env), nullptr, openable);
                auto gpus = value_of(a.set, "GPUTOPO_GPUS");
                auto cvd = value_of(a.set, "CUDA_VISIBLE_DEVICES");
                REQUIRE(gpus);
                REQUIRE(cvd);
                const int planned = b.plan().tasks[static_cast<size_t>(t)].gpus.at(0);
                CHECK(*gpus == std::to_string(planned));
                const std::vector<int> v = split_ints(*cvd);
                // The task's own GPU, as the step's cgroup numbers it (position in 4,5,6,7).
                if (options == "closest,isolate") CHECK(v == std::vector<int>{planned - 4});
                else if (!openable && t == 0) CHECK(v.size() >= 1);  // task 0's "0" tells nothing without the count
                else {
                    CHECK(v.size() == 4);
                    CHECK(v.at(static_cast<size_t>(t)) == planned - 4);  // position = local task id
                }
                if (openable) physical.insert(planned);
            }
            // The launcher, from the task's own environment and what it can open.
            Env launcher_env = task_env;
            launcher_env["SLURM_LOCALID"] = std::to_string(t);
            launcher_env["SLURM_NODEID"] = "0";
            launcher_env["SLURM_STEP_TASKS_PER_NODE"] = "4";
            launcher_env["SLURMD_NODENAME"] = "n";
            const Getenv le = env_of(launcher_env);
            const launch::TaskPlace place = launch::read_task_place(le, gputopo::host_name());
            TaskAction l = launch::binding_for(node, parse_gpu_topo(options), le, place, true,
                                               std::vector<int>{4, 5, 6, 7}, node.cpus, node.cpus, true, 4);
            TaskAction p = b.task(t, env_of(task_env), nullptr, 4);
            CHECK(value_of(l.set, "CUDA_VISIBLE_DEVICES") == value_of(p.set, "CUDA_VISIBLE_DEVICES"));
            CHECK(value_of(l.set, "GPUTOPO_GPUS") == value_of(p.set, "GPUTOPO_GPUS"));
        }
        CHECK(physical.size() == 4);  // four tasks, four GPUs
    }
    // The same step with per-task cgroups (22.05-style, or without the flag): one file open, CUDA 0.
    StepBinding own(constrained_setup(node, step, "0,1,2,3", "closest", 4), node);
    for (int t = 0; t < 4; ++t) {
        TaskAction a = own.task(t, env_of({{"SLURMD_TRES_BIND", "gpu:per_task:1"}, {"CUDA_VISIBLE_DEVICES", "0"}}),
                                nullptr, 1);
        CHECK(value_of(a.set, "CUDA_VISIBLE_DEVICES") == std::optional<std::string>("0"));
        CHECK(value_of(a.set, "GPUTOPO_GPUS") == std::optional<std::string>(std::to_string(4 + t)));
    }
    // Task 0 of a sharing step says so (verbose note).
    StepBinding shared(constrained_setup(node, step, "0,1,2,3", "closest", 4), node);
    TaskAction first =
        shared.task(0, env_of({{"SLURMD_TRES_BIND", "gpu:per_task:1"}, {"CUDA_VISIBLE_DEVICES", "0"}}), nullptr, 4);
    bool said = false;
    for (const auto& n : first.notes) said = said || n.find("allow-task-sharing") != std::string::npos;
    CHECK(said);
}
