// The planner: (node, allocated GPUs, local tasks, mode) -> one binding per
// local task.
//
// RULES (quoted by the README and man/gputopo.1)
//
// GPUs
//  * Closeness of two GPUs: NV#/XGMI# (more links closer) < PIX < PXB < PHB <
//    NODE < SYS (Path::rank()).
//  * The allocation is split into groups, one per task, as close as the
//    allocation permits: minimal worst pair inside any group, then minimal
//    sum over all pairs inside groups, then (tie-break) the PCIe-only
//    distance (so equally linked GPUs on one switch / NUMA node go together),
//    then the lowest GPU indices. Exact up to 16 allocated GPUs; above that a
//    deterministic swap-improved heuristic (gpu_grouping.hpp).
//  * GPUs per task: --gpus-per-task when given, else allocated / tasks.
//      - tasks divide the allocation: every GPU is used exactly once;
//      - no per-task count and the tasks do not divide the GPUs: every GPU is
//        still used once, tasks get floor or ceil(allocated / tasks) GPUs;
//      - a per-task count that leaves GPUs over: those GPUs stay unused;
//      - more tasks than GPU groups: tasks share groups in consecutive blocks
//        (task t gets group floor(t * groups / tasks)), so tasks sharing a
//        GPU are neighbours and split its CPUs and NICs;
//      - a per-task count above the allocation is cut to the allocation.
//    Every such case adds a note to the plan; none is an error.
//  * Task order: `closest` — by lowest GPU index (Slurm's order); `island`
//    — by island, then lowest GPU index, so consecutive tasks share an
//    island. A task's island is the island of its lowest GPU (islands.hpp:
//    NVLink/xGMI components, else GPUs under one PCIe switch; ids by lowest
//    GPU index); a note says when a task's GPUs span islands.
// CPUs and memory (cpu_allocation.hpp)
//  * Whole cores (SMT siblings together; a PU per core when cores are
//    unknown), within the step's allowed CPUs. A task's CPUs lie within the
//    local CPUs of its GPUs when those hold at least one core per task placed
//    there; tasks sharing a locality share all of it in balanced contiguous
//    blocks (sizes differ by at most one core). GPUs of unknown locality and
//    CPU-only steps: the allowed cores spread evenly. Cores local to no task
//    stay unused. mems: the NUMA nodes of the CPUs.
//  * -c N (cpus_per_task): a task never gets fewer than N CPUs while the
//    step has them: the first N of its share, whole cores first; a share
//    smaller than N (fewer CPUs local to its GPUs than asked) grows by the
//    nearest other allowed CPUs: its GPUs' NUMA nodes, their packages, the
//    rest; whole cores first; CPUs no task uses before other tasks' CPUs.
//  * Every task that can have a CPU local to its GPUs has one (a maximum
//    matching of tasks to allowed local cores): a task whose GPUs span NUMA
//    nodes never takes the last local core of a task on one of them.
//  * More tasks than allowed cores local to their GPUs: by default the cores
//    are split into hardware threads and the tasks stay on them (as mpibind
//    does): a task's CPU work is mostly feeding its GPU (kernel launches,
//    pinned host buffers, data loading), which wants the GPU's NUMA node and
//    its memory more than a core of its own; a core on the other socket puts
//    every host-device copy across the socket link. Only with more tasks than
//    local hardware threads, or with PlanRequest::whole_cores
//    (--gpu-topo=...,wholecores; gputopo plan --whole-cores), tasks keep whole
//    cores and spill to the nearest other cores (same NUMA node, same
//    package, rest), each up to ceil(cores / tasks).
// NICs (nic_selection.hpp)
//  * Each GPU of each task picks one of the usable RDMA NICs nearest to it
//    (smallest GPU-NIC distance class); GPUs with the same nearest NICs are
//    spread evenly over them (least loaded first, ties in PCI order, ports of
//    one card by name: mlx5_9 before mlx5_10). A task lists its GPUs' picks,
//    nearest first, so its first NIC is nearest to (one of) its GPUs.
//    node_nics: every usable RDMA NIC of the node in that same order,
//    identical for every task and step (NCCL_IB_HCA, NVIDIA/nccl#1478).
// Modes
//  * none: task i gets the i-th block of the allocation as given (same
//    sharing rules), no CPUs, mems or NICs, island -1; node_nics still
//    filled (it describes the node, not a binding).
//  * Deterministic: only the inputs decide the plan; in closest and island
//    modes the order in which the allocated GPUs are given does not matter.
#include "topo/plan/planner.hpp"

#include <algorithm>
#include <set>

#include "topo/plan/cpu_allocation.hpp"
#include "topo/core/errors.hpp"
#include "topo/core/strings.hpp"
#include "topo/plan/gpu_grouping.hpp"
#include "topo/plan/islands.hpp"
#include "topo/plan/nic_selection.hpp"

namespace gputopo {

const char* mode_name(Mode m) {
    switch (m) {
        case Mode::None: return "none";
        case Mode::Closest: return "closest";
        case Mode::Island: return "island";
    }
    return "none";
}

Mode parse_mode(const std::string& text) {
    if (text == "none") return Mode::None;
    if (text == "closest") return Mode::Closest;
    if (text == "island") return Mode::Island;
    throw ParseError("unknown mode '" + text + "' (expected none, closest or island)");
}

namespace {

void validate(const Node& node, const PlanRequest& req) {
    if (req.ntasks < 1)
        throw PlanError("the number of local tasks must be at least 1 (got " + std::to_string(req.ntasks) + ")");
    if (req.gpus_per_task < 0)
        throw PlanError("GPUs per task must be 0 (automatic) or more (got " +
                        std::to_string(req.gpus_per_task) + ")");
    std::set<int> seen;
    for (int g : req.gpus) {
        if (!node.gpu(g)) {
            std::string have = node.gpus.empty() ? "this node has no GPUs"
                                                 : "this node has GPUs 0-" + std::to_string(node.gpus.size() - 1);
            throw PlanError("allocated GPU " + std::to_string(g) + " is not on the node (" + have + ")");
        }
        if (!seen.insert(g).second)
            throw PlanError("allocated GPU " + std::to_string(g) + " is listed twice (allocation " +
                            join_ints(req.gpus) + ")");
    }
    if (!req.task_gpus.empty() && static_cast<int>(req.task_gpus.size()) != req.ntasks)
        throw PlanError("GPUs given for " + std::to_string(req.task_gpus.size()) + " task(s), but the node runs " +
                        std::to_string(req.ntasks));
    for (const auto& held : req.task_gpus)
        for (int g : held)
            if (!seen.count(g))
                throw PlanError("a task holds GPU " + std::to_string(g) + ", which is not in the allocation (" +
                                join_ints(req.gpus) + ")");
    if (req.cpus_per_task < 0)
        throw PlanError("CPUs per task must be 0 (all of its share) or more (got " +
                        std::to_string(req.cpus_per_task) + ")");
}

// How the allocation is cut: group kinds (sizes and counts; an uncosted kind
// holds unused GPUs) and the number of groups tasks are spread over.
struct Shape {
    std::vector<GroupKind> kinds;
    int groups = 0;
};

Shape shape_of(int n, int ntasks, int per_task, std::vector<std::string>& notes) {
    Shape s;
    if (n == 0) return s;
    if (per_task == 0) {
        if (ntasks <= n) {
            int q = n / ntasks, r = n % ntasks;
            s.kinds.push_back({q + 1, r, true});
            s.kinds.push_back({q, ntasks - r, true});
            s.groups = ntasks;
            if (r)
                notes.push_back(std::to_string(n) + " GPUs do not divide among " + std::to_string(ntasks) +
                                " tasks: " + std::to_string(r) + " task(s) get " + std::to_string(q + 1) +
                                " GPUs, the others " + std::to_string(q));
            return s;
        }
        s.kinds.push_back({1, n, true});
        s.groups = n;
        notes.push_back("more tasks (" + std::to_string(ntasks) + ") than GPUs (" + std::to_string(n) +
                        "): neighbouring tasks share a GPU");
        return s;
    }
    int g = per_task;
    if (g > n) {
        notes.push_back(std::to_string(g) + " GPUs per task asked but only " + std::to_string(n) +
                        " allocated: tasks get " + std::to_string(n));
        g = n;
    }
    int groups = std::min(ntasks, n / g);
    int unused = n - groups * g;
    s.kinds.push_back({g, groups, true});
    if (unused > 0) {
        s.kinds.push_back({unused, 1, false});
        notes.push_back(std::to_string(unused) + " allocated GPU(s) left unused: " + std::to_string(ntasks) +
                        " tasks x " + std::to_string(g) + " GPUs per task");
    }
    if (ntasks > groups)
        notes.push_back("more tasks (" + std::to_string(ntasks) + ") than groups of " + std::to_string(g) +
                        " GPUs (" + std::to_string(groups) + "): neighbouring tasks share GPUs");
    s.groups = groups;
    return s;
}

// Mode none: blocks of the allocation in the order given.
std::vector<std::vector<int>> blocks_as_given(const std::vector<int>& gpus, const Shape& s) {
    std::vector<std::vector<int>> out;
    size_t at = 0;
    for (const auto& k : s.kinds) {
        if (!k.costed) continue;
        for (int c = 0; c < k.count; ++c) {
            out.emplace_back(gpus.begin() + static_cast<long>(at), gpus.begin() + static_cast<long>(at + static_cast<size_t>(k.size)));
            at += static_cast<size_t>(k.size);
        }
    }
    return out;
}

}  // namespace

Plan make_plan(const Node& node, const PlanRequest& req) {
    validate(node, req);
    Plan plan;
    plan.mode = req.mode;
    const int ntasks = req.ntasks;
    const int n = static_cast<int>(req.gpus.size());

    Shape shape = shape_of(n, ntasks, req.gpus_per_task, plan.notes);
    std::vector<int> islands = gpu_islands(node);

    std::vector<std::vector<int>> groups;
    if (!req.task_gpus.empty()) {
        groups = req.task_gpus;  // Slurm chose them: task t holds groups[t]
    } else if (req.mode == Mode::None) {
        groups = blocks_as_given(req.gpus, shape);
    } else if (n > 0) {
        groups = group_gpus(node, req.gpus, shape.kinds);
        if (req.mode == Mode::Island)
            std::stable_sort(groups.begin(), groups.end(), [&](const std::vector<int>& a, const std::vector<int>& b) {
                int ia = islands[static_cast<size_t>(a.front())], ib = islands[static_cast<size_t>(b.front())];
                if (ia != ib) return ia < ib;
                return a.front() < b.front();
            });
    }
    if (n == 0) plan.notes.push_back("no GPUs allocated: CPU and memory binding only");

    const int ngroups = static_cast<int>(groups.size());
    plan.tasks.resize(static_cast<size_t>(ntasks));
    for (int t = 0; t < ntasks; ++t) {
        TaskBinding& b = plan.tasks[static_cast<size_t>(t)];
        b.task = t;
        if (!req.task_gpus.empty()) {
            b.gpus = groups[static_cast<size_t>(t)];
        } else if (ngroups > 0) {
            long long gi = static_cast<long long>(t) * ngroups / ntasks;
            b.gpus = groups[static_cast<size_t>(gi)];
        }
        for (int g : b.gpus) b.gpu_pci.push_back(node.gpus[static_cast<size_t>(g)].pci);
    }
    plan.node_nics = usable_node_nics(node);
    if (req.mode == Mode::None) return plan;

    // Islands.
    std::vector<int> spanning;
    for (auto& b : plan.tasks) {
        if (b.gpus.empty()) continue;
        b.island = islands[static_cast<size_t>(b.gpus.front())];
        for (int g : b.gpus)
            if (islands[static_cast<size_t>(g)] != b.island) {
                spanning.push_back(b.task);
                break;
            }
    }
    if (!spanning.empty())
        plan.notes.push_back("tasks " + join_ints(spanning) +
                             ": their GPUs span islands (the allocation allows no closer grouping)");

    // CPUs and memory.
    std::vector<CpuSet> domains;
    bool unknown_locality = false;
    for (const auto& b : plan.tasks) {
        CpuSet d;
        bool all_known = true;
        for (int g : b.gpus) {
            const CpuSet& lc = node.gpus[static_cast<size_t>(g)].local_cpus;
            if (lc.empty()) all_known = false;
            d |= lc;
        }
        if (!all_known) {
            unknown_locality = true;
            d = CpuSet();  // part of the task's GPUs have no locality: no preference
        }
        domains.push_back(d);
    }
    if (unknown_locality) plan.notes.push_back("some GPUs have no known CPU locality: their tasks' CPUs are spread evenly");
    CpuSet allowed = req.allowed_cpus ? *req.allowed_cpus : node.cpus;
    std::vector<TaskCpus> cpus = allocate_cpus(node, domains, allowed, req.whole_cores, plan.notes);
    // -c N: each task gets N CPUs (cpus_for_count). Tasks whose share holds
    // them take theirs first; then a task with a smaller share takes the
    // nearest others, CPUs no task uses before other tasks' CPUs.
    const int want = req.cpus_per_task;
    const CpuSet usable = node.cpus.empty() ? allowed : (node.cpus & allowed);
    CpuSet held;
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        const CpuSet& share = cpus[t].cpus;
        if (share.count() >= want) plan.tasks[t].cpus = cpus_for_count(node, share, domains[t], usable, CpuSet(), want);
        held |= share.count() >= want ? plan.tasks[t].cpus : share;
    }
    std::vector<int> topped;
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        const CpuSet& share = cpus[t].cpus;
        if (share.count() < want) {
            plan.tasks[t].cpus = cpus_for_count(node, share, domains[t], usable, held - share, want);
            held |= plan.tasks[t].cpus;
            if (plan.tasks[t].cpus.count() > share.count()) topped.push_back(static_cast<int>(t));
        }
        plan.tasks[t].mems = want > 0 ? numa_nodes_of(node, plan.tasks[t].cpus) : cpus[t].mems;
    }
    if (!topped.empty())
        plan.notes.push_back("tasks " + join_ints(topped) + ": fewer CPUs local to their GPUs than the " +
                             std::to_string(want) + " each asked for (-c): they also use the nearest other CPUs");

    // NICs.
    if (n > 0) {
        std::vector<std::vector<int>> task_gpus;
        for (const auto& b : plan.tasks) task_gpus.push_back(b.gpus);
        std::vector<std::vector<std::string>> nics = select_nics(node, task_gpus);
        for (size_t t = 0; t < plan.tasks.size(); ++t) plan.tasks[t].nics = nics[t];
        if (plan.node_nics.empty()) plan.notes.push_back("no usable RDMA NIC on this node: tasks get no NIC");
    }
    return plan;
}

}  // namespace gputopo
