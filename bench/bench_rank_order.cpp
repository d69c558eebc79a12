// Island-ordered ranks at 1k, 10k and 100k nodes: what ONE task pays.
//
// Per task the plugin parses SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE,
// reads the island file and computes its own placement. Each size is run in a
// forked child so that its peak RSS (ru_maxrss from wait4) belongs to the
// computation alone; an idle child gives the baseline that is subtracted.
// The island file is read once per node (slurmstepd's user_init, before the
// tasks fork); each task then parses Slurm's variables and places itself.
// Inputs are the hard case: the step holds every other node of the cluster
// (one hostlist range per node) and islands are interleaved with node names
// (island = chassis of 4 nodes, chassis dealt round robin to the leaf switches).
// Targets (issue 6): < 50 ms and < 64 MB per task at 100k nodes; cost growing
// no worse than n log n (time / (n log2 n) must not grow).
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <utility>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/rank_order.hpp"

using namespace gputopo;

namespace {

struct Input {
    std::string nodelist, tasks_per_node, island_conf, me;
};

std::string name(int n) {
    char b[24];
    std::snprintf(b, sizeof b, "%06d", n);
    return b;
}

// Typical: the step is gpu[000001-n] and each leaf switch serves 128
// consecutive names (one range per island line).
Input make_contiguous(int n) {
    Input in;
    for (int k = 0; k * 128 < n; ++k)
        in.island_conf += "Island=leaf" + std::to_string(k) + " Nodes=gpu[" + name(k * 128 + 1) + "-" +
                          name(std::min(n, k * 128 + 128)) + "]\n";
    in.nodelist = "gpu[" + name(1) + "-" + name(n) + "]";
    in.tasks_per_node = "8(x" + std::to_string(n) + ")";
    in.me = "gpu" + name(n);
    return in;
}

// Hard case: a cluster of 2n nodes in islands of 128 nodes; the step gets every other node.
Input make_input(int n) {
    const int cluster = 2 * n;
    const int islands = std::max(1, cluster / 128);
    std::vector<std::vector<int>> members(static_cast<size_t>(islands));
    for (int node = 1; node <= cluster; ++node) members[static_cast<size_t>(((node - 1) / 4) % islands)].push_back(node);
    Input in;
    for (int k = 0; k < islands; ++k) {
        in.island_conf += "Island=leaf" + std::to_string(k) + " Nodes=gpu[";
        for (size_t j = 0; j < members[static_cast<size_t>(k)].size(); ++j)
            in.island_conf += (j ? "," : "") + name(members[static_cast<size_t>(k)][j]);
        in.island_conf += "]\n";
    }
    in.nodelist = "gpu[";
    for (int node = 1, i = 0; node <= cluster; node += 2, ++i) in.nodelist += (i ? "," : "") + name(node);
    in.nodelist += "]";
    in.tasks_per_node = "8(x" + std::to_string(n) + ")";
    in.me = "gpu" + name(cluster - 1);  // the last node: the whole list is walked
    return in;
}

// Once per node (the plugin's user_init): read the island file.
IslandMap load_map(const Input& in) {
    IslandMap map;
    parse_island_conf(in.island_conf, "gputopo.conf", map, nullptr);
    map.seal();
    return map;
}

// Per task (the plugin's task_init): parse Slurm's variables, place the task.
IslandPlacement one_task(const Input& in, const IslandMap& map) {
    Hostlist nodes = Hostlist::parse(in.nodelist);
    TaskCounts tasks = TaskCounts::parse(in.tasks_per_node);
    return place_task(nodes, tasks, map, in.me, 7);
}

// The same with a parallel layout (gputopo-launch --layout tp=8,pp=4): the
// whole placement, then this task's rank.
uint64_t one_task_layout(const Input& in, const IslandMap& map) {
    Hostlist nodes = Hostlist::parse(in.nodelist);
    TaskCounts tasks = TaskCounts::parse(in.tasks_per_node);
    static const ParallelLayout layout = ParallelLayout::parse("tp=8,pp=4");
    return layout_rank(nodes, tasks, map, FabricShape{}, layout, in.me, 7);
}

double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Times {
    double wall = 0, cpu = 0;
};

// Median wall and CPU seconds of f().
template <class F>
Times median_of(int reps, F f) {
    std::vector<double> wall, cpu;
    for (int r = 0; r < reps; ++r) {
        double c0 = cpu_now();
        auto a = std::chrono::steady_clock::now();
        f();
        auto b = std::chrono::steady_clock::now();
        cpu.push_back(cpu_now() - c0);
        wall.push_back(std::chrono::duration<double>(b - a).count());
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

// Peak RSS (KiB) of a child that runs f once.
template <class F>
long child_maxrss_kib(F f) {
    pid_t pid = fork();
    if (pid == 0) {
        f();
        _exit(0);
    }
    int status = 0;
    struct rusage ru {};
    wait4(pid, &status, 0, &ru);
    return ru.ru_maxrss;
}

}  // namespace

int main() {
    std::printf("bench_rank_order: island-ordered ranks as the plugin computes them\n");
    std::printf("  per node (user_init, once): read the island file -> map load\n");
    std::printf("  per task (task_init): parse SLURM_STEP_NODELIST + SLURM_STEP_TASKS_PER_NODE, place the task\n");
    std::printf("  peak RSS: a forked child doing both, minus an idle child (ru_maxrss)\n\n");
    std::printf("  layout: the same task with --layout tp=8,pp=4 (place_layout, then its rank)\n\n");
    std::printf("%8s %8s %8s %12s %12s %12s %14s %10s %14s %10s\n", "nodes", "ranges", "islands", "map cpu ms",
                "task cpu ms", "task wall ms", "task ns/nlog2n", "RSS MB", "layout cpu ms", "layout MB");
    bool ok = true;
    double first_ratio = 0, last_ratio = 0;
    for (int pass = 0; pass < 2; ++pass) {
        std::printf("%s\n", pass == 0 ? "-- hard case: scattered step (one range per node), islands interleaved with names"
                                       : "-- typical: contiguous step gpu[000001-n], islands of 128 consecutive names");
        for (int n : {1000, 10000, 100000}) {
            Input in = pass == 0 ? make_input(n) : make_contiguous(n);
            const int reps = n >= 100000 ? 9 : 21;
            // Memory first, from a parent that holds only the inputs (freed heap
            // returned to the system), so the child's growth is the computation's.
            malloc_trim(0);
            long base = child_maxrss_kib([] {});
            long peak = child_maxrss_kib([&] {
                IslandMap fresh = load_map(in);
                (void)one_task(in, fresh);
            });
            double mb = static_cast<double>(peak - base) / 1024.0;
            long peak_layout = child_maxrss_kib([&] {
                IslandMap fresh = load_map(in);
                (void)one_task_layout(in, fresh);
            });
            double layout_mb = static_cast<double>(peak_layout - base) / 1024.0;
            IslandMap map;
            Times m = median_of(reps, [&] { map = load_map(in); });
            IslandPlacement p;
            Times t = median_of(reps, [&] { p = one_task(in, map); });
            uint64_t lr = 0;
            Times tl = median_of(reps, [&] { lr = one_task_layout(in, map); });
            (void)lr;
            double ratio = t.cpu * 1e9 / (n * std::log2(static_cast<double>(n)));
            if (pass == 0 && n == 1000) first_ratio = ratio;
            if (pass == 0) last_ratio = ratio;
            std::printf("%8d %8llu %8llu %12.3f %12.3f %12.3f %14.2f %10.2f %14.3f %10.2f\n", n,
                        static_cast<unsigned long long>(Hostlist::parse(in.nodelist).ranges().size()),
                        static_cast<unsigned long long>(p.num_islands), m.cpu * 1e3, t.cpu * 1e3, t.wall * 1e3, ratio,
                        mb, tl.cpu * 1e3, layout_mb);
            if (n == 100000 && (t.cpu > 0.050 || mb > 64 || tl.cpu > 0.050 || layout_mb > 64)) ok = false;
        }
    }
    std::printf("\ngrowth (hard case): task cpu ns/(n log2 n) at 100k / at 1k = %.2f (<= ~1: no worse than n log n)\n",
                last_ratio / first_ratio);
    std::printf("target at 100k nodes: < 50 ms CPU per task and < 64 MB, island order and layout: %s\n",
                ok ? "met" : "NOT MET");
    std::printf("(wall time includes waiting for a CPU on a loaded machine; CPU time is the task's own cost)\n");
    return 0;
}
