#include <catch2/catch.hpp>

#include <map>

#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/plan/task_env.hpp"

using namespace gputopo;

namespace {

// A hand-built 4-GPU node: GPUs 0-3, NICs mlx5_0 (port 1 down, port 2 active) and mlx5_1.
Node four_gpu_node(Vendor vendor) {
    Node n;
    for (int i = 0; i < 4; ++i) {
        Gpu g;
        g.index = i;
        g.vendor = vendor;
        g.pci = PciAddress::parse("0000:" + std::to_string(10 + i) + ":00.0");
        n.gpus.push_back(g);
    }
    Nic a;
    a.name = "mlx5_0";
    a.rdma = true;
    a.ports = {NicPort{1, "DOWN", "InfiniBand", 0, -1}, NicPort{2, "ACTIVE", "InfiniBand", 0, -1}};
    Nic b;
    b.name = "mlx5_1";
    b.rdma = true;
    n.nics = {a, b};
    return n;
}

// Four tasks, one GPU each, deliberately not in index order.
Plan four_task_plan(Mode mode) {
    Plan p;
    p.mode = mode;
    const int gpus[4] = {2, 3, 0, 1};
    for (int t = 0; t < 4; ++t) {
        TaskBinding b;
        b.task = t;
        b.gpus = {gpus[t]};
        b.gpu_pci = {PciAddress::parse("0000:" + std::to_string(10 + gpus[t]) + ":00.0")};
        b.cpus = CpuSet::range(t * 4, t * 4 + 3);
        b.mems = {t / 2};
        b.nics = {t < 2 ? "mlx5_0" : "mlx5_1"};
        b.island = t / 2;
        p.tasks.push_back(b);
    }
    p.node_nics = {"mlx5_0", "mlx5_1"};
    return p;
}

std::map<std::string, EnvVar> by_name(const std::vector<EnvVar>& v) {
    std::map<std::string, EnvVar> m;
    for (const auto& e : v) m[e.name] = e;
    return m;
}

}  // namespace

TEST_CASE("task_env sets every GPUTOPO variable for one task", "[taskenv]") {
    Node node = four_gpu_node(Vendor::Nvidia);
    Plan plan = four_task_plan(Mode::Island);
    auto env = by_name(task_env(node, plan, 1, {}));
    CHECK(env.at("GPUTOPO_MODE").value == "island");
    CHECK(env.at("GPUTOPO_GPUS").value == "3");
    CHECK(env.at("GPUTOPO_GPU_PCI").value == "0000:13:00.0");
    CHECK(env.at("GPUTOPO_CPUS").value == "4-7");
    CHECK(env.at("GPUTOPO_MEMS").value == "0");
    CHECK(env.at("GPUTOPO_NIC").value == "mlx5_0");
    CHECK(env.at("GPUTOPO_ISLAND").value == "0");
    CHECK(env.at("CUDA_DEVICE_ORDER").value == "PCI_BUS_ID");
    CHECK(env.at("NCCL_IB_HCA").value == "=mlx5_0,mlx5_1");
    // mlx5_0's first active port is 2.
    CHECK(env.at("UCX_NET_DEVICES").value == "mlx5_0:2");
    CHECK(env.at("UCX_NET_DEVICES").user_wins);
    CHECK_FALSE(env.at("GPUTOPO_CPUS").user_wins);
    CHECK(env.count("ROCR_VISIBLE_DEVICES") == 0);
}

TEST_CASE("shared view: position = local task id holds the task's GPU", "[taskenv]") {
    Node node = four_gpu_node(Vendor::Nvidia);
    Plan plan = four_task_plan(Mode::Closest);
    for (int t = 0; t < 4; ++t) {
        auto env = by_name(task_env(node, plan, t, {}));
        CHECK(env.at("CUDA_VISIBLE_DEVICES").value == "2,3,0,1");
        CHECK(env.at("NCCL_IB_HCA").value == "=mlx5_0,mlx5_1");  // the same on every task
    }
    // Relative numbering (ConstrainDevices): positions in the sorted step list.
    TaskEnvOptions rel;
    rel.step_gpus = {0, 1, 2, 3};
    rel.relative_numbering = true;
    CHECK(by_name(task_env(node, plan, 0, rel)).at("CUDA_VISIBLE_DEVICES").value == "2,3,0,1");
}

TEST_CASE("shared view appends step GPUs no task got; relative numbering maps them", "[taskenv]") {
    Node node = four_gpu_node(Vendor::Nvidia);
    Plan plan;
    plan.mode = Mode::Closest;
    TaskBinding b;
    b.task = 0;
    b.gpus = {3};
    plan.tasks = {b};
    TaskEnvOptions opt;
    opt.step_gpus = {3, 1};
    CHECK(visible_gpus(plan, 0, opt) == std::vector<int>{3, 1});
    CHECK(by_name(task_env(node, plan, 0, opt)).at("CUDA_VISIBLE_DEVICES").value == "3,1");
    opt.relative_numbering = true;
    CHECK(by_name(task_env(node, plan, 0, opt)).at("CUDA_VISIBLE_DEVICES").value == "1,0");
    opt.step_gpus = {1};
    CHECK_THROWS_AS(task_env(node, plan, 0, opt), PlanError);
}

TEST_CASE("isolate, several GPUs per task and share", "[taskenv]") {
    Node node = four_gpu_node(Vendor::Nvidia);
    Plan plan = four_task_plan(Mode::Closest);
    TaskEnvOptions iso;
    iso.isolate = true;
    CHECK(by_name(task_env(node, plan, 2, iso)).at("CUDA_VISIBLE_DEVICES").value == "0");

    Plan two;
    two.mode = Mode::Island;
    TaskBinding a, c;
    a.task = 0;
    a.gpus = {1, 0};
    c.task = 1;
    c.gpus = {2, 3};
    two.tasks = {a, c};
    CHECK(task_isolated(two, 1, {}));
    CHECK(by_name(task_env(node, two, 1, {})).at("CUDA_VISIBLE_DEVICES").value == "2,3");
    CHECK(by_name(task_env(node, two, 0, {})).at("CUDA_VISIBLE_DEVICES").value == "1,0");
    TaskEnvOptions share;
    share.share = true;
    CHECK_FALSE(task_isolated(two, 1, share));
    CHECK(by_name(task_env(node, two, 1, share)).at("CUDA_VISIBLE_DEVICES").value == "1,0,2,3");
}

TEST_CASE("AMD GPUs: ROCR_VISIBLE_DEVICES holds the order, HIP sees 0..k-1", "[taskenv]") {
    Node node = four_gpu_node(Vendor::Amd);
    Plan plan = four_task_plan(Mode::Closest);
    auto env = by_name(task_env(node, plan, 3, {}));
    CHECK(env.at("ROCR_VISIBLE_DEVICES").value == "2,3,0,1");
    CHECK(env.at("CUDA_VISIBLE_DEVICES").value == "0,1,2,3");
    TaskEnvOptions iso;
    iso.isolate = true;
    auto e2 = by_name(task_env(node, plan, 3, iso));
    CHECK(e2.at("ROCR_VISIBLE_DEVICES").value == "1");
    CHECK(e2.at("CUDA_VISIBLE_DEVICES").value == "0");
}

TEST_CASE("mode none sets nothing; a task outside the plan is an error", "[taskenv]") {
    Node node = four_gpu_node(Vendor::Nvidia);
    CHECK(task_env(node, four_task_plan(Mode::None), 0, {}).empty());
    CHECK_THROWS_AS(task_env(node, four_task_plan(Mode::Closest), 4, {}), PlanError);
    CHECK_THROWS_AS(task_env(node, four_task_plan(Mode::Closest), -1, {}), PlanError);
}

TEST_CASE("keep_user_values keeps the user's NCCL/UCX values, never ours", "[taskenv]") {
    Node node = four_gpu_node(Vendor::Nvidia);
    Plan plan = four_task_plan(Mode::Closest);
    std::map<std::string, std::string> user = {
        {"NCCL_IB_HCA", "mlx5_7"}, {"GPUTOPO_CPUS", "99"}, {"CUDA_VISIBLE_DEVICES", "0"}, {"UCX_NET_DEVICES", ""}};
    auto r = keep_user_values(task_env(node, plan, 0, {}), [&](const std::string& n) -> std::optional<std::string> {
        auto it = user.find(n);
        if (it == user.end()) return std::nullopt;
        return it->second;
    });
    auto set = by_name(r.set);
    auto kept = by_name(r.kept);
    REQUIRE(kept.size() == 1);
    CHECK(kept.at("NCCL_IB_HCA").value == "mlx5_7");
    CHECK(set.count("NCCL_IB_HCA") == 0);
    CHECK(set.at("GPUTOPO_CPUS").value == "0-3");           // ours: always set
    CHECK(set.at("CUDA_VISIBLE_DEVICES").value == "2,3,0,1");  // Slurm's set, our order
    CHECK(set.at("UCX_NET_DEVICES").value == "mlx5_0:2");   // empty user value counts as unset
}
