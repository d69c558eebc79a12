#include "topo/plan/task_env.hpp"

#include <algorithm>

#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/plan/nic_selection.hpp"
#include "topo/plan/fabric_env.hpp"
#include "topo/plan/omp_env.hpp"

namespace gputopo {

namespace {

const TaskBinding& binding(const Plan& plan, int task) {
    if (task < 0 || static_cast<size_t>(task) >= plan.tasks.size())
        throw PlanError("local task " + std::to_string(task) + " is not in the plan (" +
                        std::to_string(plan.tasks.size()) + " local tasks)");
    return plan.tasks[static_cast<size_t>(task)];
}

void add_unique(std::vector<int>& v, int x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// The port UCX should use: the first active port, else the first port, else 1.
int nic_port(const Node& node, const std::string& name) {
    const Nic* nic = node.nic(name);
    if (!nic || nic->ports.empty()) return 1;
    for (const auto& p : nic->ports)
        if (p.state == "ACTIVE") return p.number;
    return nic->ports.front().number;
}

bool all_amd(const Node& node, const std::vector<int>& gpus) {
    if (gpus.empty()) return false;
    for (int g : gpus) {
        const Gpu* gpu = node.gpu(g);
        if (!gpu || gpu->vendor != Vendor::Amd) return false;
    }
    return true;
}

}  // namespace

bool task_isolated(const Plan& plan, int task, const TaskEnvOptions& opt) {
    if (opt.isolate) return true;
    if (opt.share) return false;
    return binding(plan, task).gpus.size() > 1;
}

std::vector<int> visible_gpus(const Plan& plan, int task, const TaskEnvOptions& opt) {
    const TaskBinding& own = binding(plan, task);
    if (task_isolated(plan, task, opt)) return own.gpus;
    std::vector<int> order;
    for (const auto& t : plan.tasks)
        for (int g : t.gpus) add_unique(order, g);
    std::vector<int> rest = opt.step_gpus;
    std::sort(rest.begin(), rest.end());
    for (int g : rest) add_unique(order, g);
    return order;
}

std::vector<EnvVar> task_env(const Node& node, const Plan& plan, int task, const TaskEnvOptions& opt) {
    const TaskBinding& b = binding(plan, task);
    std::vector<EnvVar> out;
    if (plan.mode == Mode::None) return out;
    auto ours = [&](const char* name, const std::string& value) {
        if (!value.empty()) out.push_back({name, value, false});
    };
    auto theirs = [&](const char* name, const std::string& value) {
        if (!value.empty()) out.push_back({name, value, true});
    };

    ours(env::kMode, mode_name(plan.mode));
    ours(env::kGpus, join_ints(b.gpus));
    std::vector<std::string> pci;
    for (const auto& a : b.gpu_pci) pci.push_back(a.to_string());
    ours(env::kGpuPci, join_strings(pci));
    ours(env::kCpus, b.cpus.to_list());
    ours(env::kMems, join_ints(b.mems));
    std::vector<std::string> named;  // a NIC known only by its PCI address is no name to hand a task
    for (const auto& n : b.nics)
        if (is_device_name(n)) named.push_back(n);
    ours(env::kNic, join_strings(named));
    if (b.island >= 0) ours(env::kIsland, std::to_string(b.island));

    if (!b.gpus.empty()) {
        std::vector<int> order = visible_gpus(plan, task, opt);
        std::vector<int> numbers = order;
        if (opt.relative_numbering) {
            std::vector<int> base = opt.step_gpus;
            std::sort(base.begin(), base.end());
            for (int& n : numbers) {
                auto it = std::find(base.begin(), base.end(), n);
                if (it == base.end())
                    throw PlanError("GPU " + std::to_string(n) + " is not among the step's GPUs (" +
                                    join_ints(base) + ")");
                n = static_cast<int>(it - base.begin());
            }
        }
        if (all_amd(node, order)) {
            ours(env::kRocrVisibleDevices, join_ints(numbers));
            std::vector<int> identity(numbers.size());
            for (size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<int>(i);
            ours(env::kCudaVisibleDevices, join_ints(identity));
        } else {
            ours(env::kCudaVisibleDevices, join_ints(numbers));
        }
        theirs(env::kCudaDeviceOrder, "PCI_BUS_ID");
    }
    // Verbs names only for verbs NICs with a device name (topo/plan/fabric_env.hpp); libfabric's otherwise.
    const Fabric fabric = node_fabric(node, plan.node_nics);
    const std::vector<std::string> hcas = fabric_devices(node, plan.node_nics, Fabric::Verbs);
    if (!hcas.empty()) theirs(env::kNcclIbHca, "=" + join_strings(hcas));
    if (!hcas.empty()) {
        // RoCE: the RoCE v2 GID index shared by the node's NICs (node_roce_gid_index, topo/plan/nic_selection.hpp), -1 on InfiniBand.
        int gid = node_roce_gid_index(node);
        if (gid >= 0) theirs(env::kNcclIbGidIndex, std::to_string(gid));
    }
    const std::vector<std::string> own = fabric_devices(node, b.nics, Fabric::Verbs);
    if (!own.empty()) theirs(env::kUcxNetDevices, own.front() + ":" + std::to_string(nic_port(node, own.front())));
    for (auto& v : fabric_env(node, fabric, b.nics)) out.push_back(std::move(v));
    for (auto& v : omp_env(node, b.cpus, opt.omp_per_thread)) out.push_back(std::move(v));
    return out;
}

ResolvedEnv keep_user_values(const std::vector<EnvVar>& wanted,
                             const std::function<std::optional<std::string>(const std::string&)>& current) {
    ResolvedEnv r;
    for (const auto& v : wanted) {
        if (v.user_wins) {
            std::optional<std::string> have = current(v.name);
            if (have && !have->empty()) {
                r.kept.push_back({v.name, *have, true});
                continue;
            }
        }
        r.set.push_back(v);
    }
    return r;
}

}  // namespace gputopo
