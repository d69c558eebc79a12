// Island-ordered ranks at 1k, 10k and 100k nodes: what ONE task pays.
//
// Per task the plugin parses SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE,
// reads the island file and computes its own placement. Each size is run in a
// forked child so that its peak RSS (ru_maxrss from wait4) belongs to the
// computation alone; an idle child gives the baseline that is subtracted.
// Inputs are the hard case: the step holds every other node of the cluster
// (one hostlist range per node) and islands are interleaved with node names
// (island = chassis of 4 nodes, chassis dealt round robin to the leaf switches).
// Targets (issue 6): < 50 ms and < 64 MB per task at 100k nodes; cost growing
// no worse than n log n (time / (n log2 n) must not grow).
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

#include "topo/island_sources.hpp"
#include "topo/rank_order.hpp"

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

IslandPlacement one_task(const Input& in) {
    IslandMap map;
    parse_island_conf(in.island_conf, "gputopo.conf", map, nullptr);
    map.seal();
    Hostlist nodes = Hostlist::parse(in.nodelist);
    TaskCounts tasks = TaskCounts::parse(in.tasks_per_node);
    return place_task(nodes, tasks, map, in.me, 7);
}

double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Median wall and CPU seconds of one task's work.
std::pair<double, double> seconds_of(const Input& in, int reps, IslandPlacement& out) {
    std::vector<double> wall, cpu;
    for (int r = 0; r < reps; ++r) {
        double c0 = cpu_now();
        auto a = std::chrono::steady_clock::now();
        out = one_task(in);
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
    std::printf("bench_rank_order: one task's island placement (parse nodelist + tasks per node + island file, place)\n");
    std::printf("inputs: step = every other node of a 2n-node cluster (n one-host ranges), 8 tasks/node,\n"
                "        islands of 128 nodes interleaved with names (chassis of 4 dealt round robin)\n\n");
    std::printf("%8s %8s %8s %10s %10s %14s %12s %8s\n", "nodes", "ranges", "islands", "wall ms", "cpu ms",
                "cpu ns/nlog2n", "peak RSS MB", "rank");
    bool ok = true;
    double first_ratio = 0, last_ratio = 0;
    for (int pass = 0; pass < 2; ++pass) {
    std::printf("%s\n", pass == 0 ? "-- hard case: scattered step, interleaved islands"
                                   : "-- typical: contiguous step gpu[000001-n], islands of 128 consecutive names");
    for (int n : {1000, 10000, 100000}) {
        Input in = pass == 0 ? make_input(n) : make_contiguous(n);
        IslandPlacement p;
        auto [wall, s] = seconds_of(in, n >= 100000 ? 9 : 21, p);
        long base = child_maxrss_kib([] {});
        long peak = child_maxrss_kib([&] { (void)one_task(in); });
        double mb = static_cast<double>(peak - base) / 1024.0;
        double ratio = s * 1e9 / (n * std::log2(static_cast<double>(n)));
        if (pass == 0 && n == 1000) first_ratio = ratio;
        if (pass == 0) last_ratio = ratio;
        std::printf("%8d %8llu %8llu %10.3f %10.3f %14.2f %12.2f %8llu\n", n,
                    static_cast<unsigned long long>(Hostlist::parse(in.nodelist).ranges().size()),
                    static_cast<unsigned long long>(p.num_islands), wall * 1e3, s * 1e3, ratio, mb,
                    static_cast<unsigned long long>(p.rank));
        if (n == 100000 && (s > 0.050 || mb > 64)) ok = false;
    }
    }
    std::printf("\ngrowth (hard case): cpu ns/(n log2 n) at 100k / at 1k = %.2f (<= ~1: no worse than n log n)\n",
                last_ratio / first_ratio);
    std::printf("target at 100k nodes: < 50 ms CPU and < 64 MB per task: %s\n", ok ? "met" : "NOT MET");
    std::printf("(wall time includes waiting for a CPU on a loaded machine; CPU time is the task's own cost)\n");
    return 0;
}
