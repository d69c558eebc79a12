// Benchmark: per shipped topology (tests/fixtures/topologies/{hwloc,nccl}),
// the time to load the file and the time to plan from the loaded model
// (every GPU, one task per GPU, modes closest and island), plus 16-GPU cases
// against the target "planning < 1 ms for 16 GPUs and 16 tasks".
// Prints figures (medians); it is not a test and always exits 0 unless the
// fixtures cannot be found.
//
//   build/bench/bench_topology [TOPOLOGIES_DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "topo/core/errors.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLoadReps = 15;       // loads per file (bounded by kLoadBudget)
constexpr int kPlanReps = 1000;     // plans per file and mode (bounded by kPlanBudget)
constexpr double kLoadBudget = 0.5; // seconds per file
constexpr double kPlanBudget = 0.5; // seconds per file and mode
constexpr double kTargetMs = 1.0;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Timing {
    double median_ms = 0;
    int reps = 0;
};

template <typename F>
Timing time_median(int max_reps, double budget_s, F&& f) {
    std::vector<double> ms;
    auto start = Clock::now();
    for (int i = 0; i < max_reps; ++i) {
        auto t0 = Clock::now();
        f();
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (i >= 4 && seconds_since(start) > budget_s) break;
    }
    return {median(ms), static_cast<int>(ms.size())};
}

PlanRequest all_gpus(const Node& node, Mode mode, int ntasks) {
    PlanRequest r;
    for (const auto& g : node.gpus) r.gpus.push_back(g.index);
    r.ntasks = ntasks;
    r.mode = mode;
    return r;
}

// Keeps the optimiser from dropping the work.
volatile size_t g_sink = 0;

Timing time_plan(const Node& node, const PlanRequest& req) {
    return time_median(kPlanReps, kPlanBudget, [&] { g_sink = g_sink + make_plan(node, req).tasks.size(); });
}

// A 16-GPU PCIe-only node, built by hand: 2 sockets, 2 host bridges per
// socket, one PCIe switch per host bridge with 4 GPUs and 1 NIC; 32 cores
// with 2 PUs each per socket. No GPU links, so grouping rests on the PCI tree.
Node synthetic_pcie16() {
    Node n;
    n.source = "synthetic 16-GPU PCIe node";
    for (int s = 0; s < 2; ++s) {
        NumaNode numa;
        numa.os_index = s;
        numa.cpus = CpuSet::range(s * 32, s * 32 + 31) | CpuSet::range(64 + s * 32, 64 + s * 32 + 31);
        n.numa_nodes.push_back(numa);
        Package p;
        p.os_index = s;
        p.cpus = numa.cpus;
        n.packages.push_back(p);
        for (int c = 0; c < 32; ++c) {
            Core core;
            core.package = s;
            core.numa = s;
            core.pus.set(s * 32 + c);
            core.pus.set(64 + s * 32 + c);
            n.cores.push_back(core);
        }
    }
    int bus = 0x10;
    for (int hb = 0; hb < 4; ++hb) {
        const int numa = hb / 2;
        PciObject host;
        host.kind = PciKind::HostBridge;
        host.numa = numa;
        host.local_cpus = n.numa_nodes[static_cast<size_t>(numa)].cpus;
        n.pci.push_back(host);
        const int host_i = static_cast<int>(n.pci.size()) - 1;
        PciObject up;
        up.kind = PciKind::Bridge;
        up.parent = host_i;
        n.pci.push_back(up);
        const int up_i = static_cast<int>(n.pci.size()) - 1;
        for (int d = 0; d < 5; ++d) {
            PciObject port;
            port.kind = PciKind::Bridge;
            port.parent = up_i;
            n.pci.push_back(port);
            PciObject dev;
            dev.kind = PciKind::Device;
            dev.parent = static_cast<int>(n.pci.size()) - 1;
            dev.has_address = true;
            dev.address.bus = static_cast<uint32_t>(bus++);
            n.pci.push_back(dev);
            const int dev_i = static_cast<int>(n.pci.size()) - 1;
            if (d < 4) {
                Gpu g;
                g.vendor = Vendor::Nvidia;
                g.pci = dev.address;
                g.pci_object = dev_i;
                n.gpus.push_back(g);
            } else {
                Nic nic;
                nic.name = "mlx5_" + std::to_string(hb);
                nic.rdma = true;
                nic.pci = dev.address;
                nic.pci_object = dev_i;
                n.nics.push_back(nic);
            }
        }
    }
    n.finalize();
    return n;
}

void target_line(const std::string& what, const Node& node, Mode mode, int ntasks) {
    Timing t = time_plan(node, all_gpus(node, mode, ntasks));
    const bool per_target = static_cast<int>(node.gpus.size()) == 16 && ntasks == 16;
    std::printf("  %-44s %-8s %2zu GPUs %2d tasks  median %8.4f ms  (%d runs)%s\n", what.c_str(), mode_name(mode),
                node.gpus.size(), ntasks, t.median_ms, t.reps,
                per_target ? (t.median_ms < kTargetMs ? "  PASS (< 1 ms)" : "  FAIL (>= 1 ms)") : "");
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir = argc > 1 ? argv[1] : "";
    if (dir.empty()) {
        const char* src = std::getenv("GPUTOPO_SOURCE_DIR");
        dir = std::string(src ? src : GPUTOPO_SOURCE_DIR) + "/tests/fixtures/topologies";
    }
    std::vector<std::string> files;
    for (const char* sub : {"hwloc", "nccl"}) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(dir + "/" + sub, ec))
            if (e.path().extension() == ".xml") files.push_back(std::string(sub) + "/" + e.path().filename().string());
        if (ec) {
            std::fprintf(stderr, "bench_topology: cannot list %s/%s: %s\n", dir.c_str(), sub, ec.message().c_str());
            return 1;
        }
    }
    std::sort(files.begin(), files.end());

    auto start = Clock::now();
    std::printf("gputopo topology benchmark: medians in ms; load: up to %d loads/file; plan: every GPU, one task per "
                "GPU, up to %d plans/file/mode\n",
                kLoadReps, kPlanReps);
    std::printf("%-88s %4s %4s %9s %9s %9s\n", "topology", "GPUs", "NICs", "load", "closest", "island");
    Node dgx2;
    for (const auto& f : files) {
        const std::string path = dir + "/" + f;
        Node node;
        try {
            node = load_topology_file(path);
        } catch (const TopologyError& e) {
            std::printf("%-88s not loaded: %s\n", f.c_str(), e.what());
            continue;
        }
        Timing load = time_median(kLoadReps, kLoadBudget, [&] { g_sink = g_sink + load_topology_file(path).gpus.size(); });
        const int ngpus = static_cast<int>(node.gpus.size());
        Timing closest = time_plan(node, all_gpus(node, Mode::Closest, std::max(1, ngpus)));
        Timing island = time_plan(node, all_gpus(node, Mode::Island, std::max(1, ngpus)));
        std::printf("%-88s %4d %4zu %9.3f %9.4f %9.4f\n", f.c_str(), ngpus, node.nics.size(), load.median_ms,
                    closest.median_ms, island.median_ms);
        if (ngpus == 16 && dgx2.gpus.empty()) dgx2 = node;
    }

    std::printf("\nTarget: planning < 1 ms for 16 GPUs and 16 tasks (multi-GPU tasks shown for reference)\n");
    Node pcie = synthetic_pcie16();
    if (!dgx2.gpus.empty()) std::printf("  16-GPU fixture: %s\n", dgx2.source.c_str());
    for (Mode m : {Mode::Closest, Mode::Island}) {
        if (!dgx2.gpus.empty()) target_line("16-GPU fixture", dgx2, m, 16);
        target_line("synthetic 16-GPU PCIe node (4 switches)", pcie, m, 16);
    }
    for (int ntasks : {8, 4, 2}) {
        if (!dgx2.gpus.empty()) target_line("16-GPU fixture, multi-GPU tasks", dgx2, Mode::Closest, ntasks);
        target_line("synthetic 16-GPU PCIe node, multi-GPU tasks", pcie, Mode::Closest, ntasks);
    }
    std::printf("\ntotal benchmark time: %.1f s\n", seconds_since(start));
    return 0;
}
