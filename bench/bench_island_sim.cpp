// Simulation: bytes per training step that cross island boundaries for a
// 3D-parallel job, with Slurm's default rank order (node-name order) and with
// gputopo's island order (topo/rank_order, the code the plugin runs), against
// an analytic lower bound. Then the reliability arithmetic at 100,000 GPUs and
// the Young/Daly checkpoint interval it implies. Every formula's inputs are
// printed. Deterministic (fixed seed), no timing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "topo/fabric/hostlist.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"
#include "topo/fabric/rank_order.hpp"

using namespace gputopo;

namespace {

struct Cluster {
    const char* name;
    int nodes;            // in the cluster
    int gpus_per_node;
    int nodes_per_island;
    const char* naming;   // how names relate to islands (printed)
    int (*island_of)(int node, const Cluster& c);  // node number (name order) -> island
    double in_gbs;        // per-GPU bandwidth inside an island, GB/s
    double out_gbs;       // per-GPU bandwidth between islands, GB/s
};

// Fat tree: 4-node chassis dealt round robin to the leaf switches.
int chassis_round_robin(int node, const Cluster& c) { return (node / 4) % (c.nodes / c.nodes_per_island); }
// NVL72: compute trays named round robin across racks (as on Azure GB200 clusters).
int tray_round_robin(int node, const Cluster& c) { return node % (c.nodes / c.nodes_per_island); }

struct Job {
    const char* name;
    ModelShape model;
    const char* layout;  // ParallelLayout text without order
};

struct Row {
    std::string job, order;
    double slurm, island, placed, bound;
};
std::vector<Row> g_rows;

std::string gb(double bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", bytes / 1e9);
    return b;
}

void print_bytes(const char* what, const CrossBytes& x, double bound) {
    std::printf("     %-24s %10.1f %10.1f %10.1f %10.1f %10.1f %11.1f %9.3fx\n", what, x.tp / 1e9, x.cp / 1e9,
                x.ep / 1e9, x.pp / 1e9, x.dp / 1e9, x.total() / 1e9, bound > 0 ? x.total() / bound : 0.0);
}

std::string name_of(int n) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "gpu%05d", n);
    return buf;
}

void scenario(const Cluster& c, const FabricShape& shape, const Job& job, double busy_fraction) {
    ParallelLayout base = ParallelLayout::parse(job.layout);
    uint64_t inner = 1;
    for (ParDim d : {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP}) inner *= base.size(d);
    const int job_gpus = int(inner);
    const int job_nodes = job_gpus / c.gpus_per_node;
    const int islands = c.nodes / c.nodes_per_island;
    const ModelShape& m = job.model;
    std::printf("\n== %s: %d nodes x %d GPUs, %d islands of %d nodes (%d GPUs), %.0f GB/s per GPU inside, %.1f GB/s "
                "between (%.0f:1)%s\n",
                c.name, c.nodes, c.gpus_per_node, islands, c.nodes_per_island, c.nodes_per_island * c.gpus_per_node,
                c.in_gbs, c.out_gbs, c.in_gbs / c.out_gbs, shape.islands_are_nvlink ? "; islands are NVLink domains" : "");
    std::printf("   naming: %s\n", c.naming);
    std::printf("   job: %s, %s = %d GPUs on %d nodes; %.0fB params, %llu layers, hidden %llu, seq %llu, "
                "micro-batch %llu, %llu micro-batches/step%s\n",
                job.name, job.layout, job_gpus, job_nodes, m.params / 1e9, (unsigned long long)m.layers,
                (unsigned long long)m.hidden, (unsigned long long)m.seq, (unsigned long long)m.micro_batch,
                (unsigned long long)m.microbatches,
                base.size(ParDim::EP) > 1 ? (", top-" + std::to_string(m.top_k) + " experts").c_str() : "");

    // Allocation: the first job_nodes free nodes in name order, with a
    // deterministic busy_fraction of the cluster already in use.
    uint64_t seed = 42;
    std::vector<int> nodes;
    for (int n = 0; n < c.nodes && int(nodes.size()) < job_nodes; ++n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        if (double(seed >> 11) / double(1ull << 53) < busy_fraction) continue;
        nodes.push_back(n);
    }
    if (int(nodes.size()) < job_nodes) {
        std::printf("   (cluster too small for the job)\n");
        return;
    }
    std::vector<uint64_t> per_island(static_cast<size_t>(islands), 0);
    for (int n : nodes) per_island[size_t(c.island_of(n, c))] += uint64_t(c.gpus_per_node);
    int touched = 0;
    for (uint64_t g : per_island) touched += g > 0;
    std::printf("   allocation: %d%% of the cluster busy; the job's %d nodes are the first free ones in name order "
                "and touch %d islands\n",
                int(busy_fraction * 100), job_nodes, touched);

    std::vector<std::string> names;
    for (int n : nodes) names.push_back(name_of(n));
    Hostlist step = Hostlist::from_names(names);
    IslandMap map;
    {
        std::vector<std::vector<std::string>> members(static_cast<size_t>(islands));
        for (int n = 0; n < c.nodes; ++n) members[size_t(c.island_of(n, c))].push_back(name_of(n));
        for (int i = 0; i < islands; ++i)
            map.add("island" + std::to_string(i), Hostlist::from_names(members[size_t(i)]), IslandSource::GputopoConf,
                    "sim:" + std::to_string(i));
        map.seal();
    }
    const TaskCounts counts = TaskCounts::uniform(step.count(), uint32_t(c.gpus_per_node));
    // Slurm's order: ranks block-distributed over the node list in name order.
    std::vector<uint32_t> slurm_island(static_cast<size_t>(job_gpus));
    for (int r = 0; r < job_gpus; ++r)
        slurm_island[size_t(r)] = uint32_t(c.island_of(nodes[size_t(r / c.gpus_per_node)], c));
    // gputopo's island order (--gpu-topo=island without a layout).
    std::vector<uint32_t> island_island(static_cast<size_t>(job_gpus));
    for (const NodePlacement& row : place_step(step, counts, map)) {
        uint32_t isl = uint32_t(std::stoi(row.island.substr(6)));
        for (uint32_t t = 0; t < row.tasks; ++t) island_island[size_t(row.first_rank + t)] = isl;
    }

    for (const char* order : {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"}) {
        ParallelLayout l = ParallelLayout::parse(std::string(job.layout) + ",order=" + order);
        l.resolve(uint64_t(job_gpus));
        const EdgeBytes e = edge_bytes(m, l);
        if (order[9] == 'd')
            std::printf("   per-edge bytes per step: TP ring %.3g, CP ring %.3g, EP pair %.3g, PP %.3g, DP ring %.3g "
                        "(act %.3g; formulas in topo/fabric/layout_traffic.hpp)\n",
                        e.tp, e.cp, e.ep_pair, e.pp, e.dp, e.act);
        // The layout placement (--gpu-topo=island,layout=... / gputopo-launch --layout).
        LayoutPlacement placed = place_layout(step, counts, map, shape, l, &e);
        std::vector<uint32_t> placed_local = placed.island_of_rank();
        std::vector<uint32_t> placed_island(placed_local.size());
        for (size_t r = 0; r < placed_local.size(); ++r)
            placed_island[r] = uint32_t(std::stoi(island_name(placed, step, map, placed_local[r]).substr(6)));

        BoundBytes lb = lower_bound_bytes(l, per_island, e);
        const double bound = lb.total();
        CrossBytes a = crossing_bytes(l, slurm_island, e), b = crossing_bytes(l, island_island, e),
                   p = crossing_bytes(l, placed_island, e);
        std::printf("   order %s%s\n", order, order[9] == 'd' ? " (Megatron's default)" : " (replicas contiguous)");
        std::printf("     %-24s %10s %10s %10s %10s %10s %11s %10s\n", "rank order", "TP GB", "CP GB", "EP GB",
                    "PP GB", "DP GB", "total GB", "vs bound");
        print_bytes("Slurm (name order)", a, bound);
        print_bytes("gputopo island order", b, bound);
        print_bytes(placed.pipelines_first() ? "layout placement (pp)" : "gputopo layout placement", p, bound);
        if (lb.joint > lb.separate)
            std::printf("     %-24s %10.1f %43s %11.1f %9.3fx\n", "lower bound", lb.parts.tp / 1e9,
                        "(CP+EP+PP+DP bounded together)", bound / 1e9, 1.0);
        else
            print_bytes("lower bound", lb.parts, bound);
        std::printf("     bound: TP groups that cannot sit whole in islands %s GB + max(CP, EP, DP, PP bounded apart %s "
                    "GB, bounded together per island %s GB)\n",
                    gb(lb.parts.tp).c_str(), gb(lb.separate).c_str(), gb(lb.joint).c_str());
        for (const GroupSpread& g : group_spread(placed))
            if (g.straddling > 0 && (g.dim == ParDim::TP || g.dim == ParDim::CP || g.dim == ParDim::EP))
                std::printf("     straddling %s groups: %llu of %llu (%s)\n", par_dim_name(g.dim),
                            (unsigned long long)g.straddling, (unsigned long long)g.groups, g.why.c_str());
        double uplink = double(touched) * c.nodes_per_island * c.gpus_per_node * c.out_gbs * 1e9;
        std::printf("     through the %d islands' uplinks (%.0f GB/s in all): Slurm %.3f s, island order %.3f s, "
                    "placement %.3f s per step\n",
                    touched, uplink / 1e9, a.total() / uplink, b.total() / uplink, p.total() / uplink);
        g_rows.push_back({std::string(c.name).substr(0, std::string(c.name).find(',')) + ": " + job.name + " " + job.layout,
                          order, a.total(), b.total(), p.total(), bound});
    }
}

void reliability() {
    const double hours_per_year = 365.25 * 24;
    const double link_mttf_h = 5 * hours_per_year;
    const double gpus = 100000;
    std::printf("\n== Reliability at %.0f GPUs: a failed link stops a synchronous job\n", gpus);
    std::printf("   link MTTF = 5 years = %.0f h; failures independent, exponential: first failure of L links after "
                "MTTF/L on average\n",
                link_mttf_h);
    struct Assumption {
        const char* what;
        double links_per_gpu;
    } as[] = {
        {"1.00 link/GPU: only the GPU's NIC-to-leaf cable", 1.0},
        {"1.50 links/GPU: NIC-to-leaf + leaf-to-spine (4:1 -> 0.25) + spine-to-core (0.25)", 1.5},
        {"19.5 links/GPU: the above + 18 NVLinks per GPU (H100 SXM) to its NVSwitches", 19.5},
    };
    double used_minutes = 0;
    for (const Assumption& a : as) {
        double links = gpus * a.links_per_gpu;
        double minutes = link_mttf_h / links * 60;
        std::printf("   %-84s L = %9.0f  ->  %7.2f min\n", a.what, links, minutes);
        if (a.links_per_gpu == 1.5) used_minutes = minutes;
    }
    std::printf("   the seed's claim (under half an hour) holds from %.0f links on: %.2f links per GPU\n",
                link_mttf_h / 0.5, link_mttf_h / 0.5 / gpus);

    const double m_s = used_minutes * 60;  // 1.5 links/GPU
    std::printf("\n== Checkpoint interval for M = %.0f s (1.5 links/GPU), by checkpoint cost delta\n", m_s);
    std::printf("   Young: tau = sqrt(2 delta M); Daly: tau = sqrt(2 delta M) [1 + sqrt(delta/(2M))/3 + delta/(18M)] - delta "
                "(delta < 2M); waste ~ delta/tau + tau/(2M)\n");
    std::printf("   %10s %12s %12s %10s\n", "delta s", "Young s", "Daly s", "waste");
    for (double delta : {10.0, 30.0, 60.0, 120.0, 300.0}) {
        double young = std::sqrt(2 * delta * m_s);
        double daly = delta < 2 * m_s
                          ? young * (1 + std::sqrt(delta / (2 * m_s)) / 3 + delta / (18 * m_s)) - delta
                          : m_s;
        double waste = delta / daly + daly / (2 * m_s);
        std::printf("   %10.0f %12.1f %12.1f %9.1f%%\n", delta, young, daly, waste * 100);
    }
}

}  // namespace

int main() {
    std::printf("bench_island_sim: bytes per step crossing island boundaries: Slurm order, island order, layout "
                "placement, lower bound\n");
    Cluster fat{"fat tree, 1,024-GPU islands, 4:1 between islands",
                12500,
                8,
                128,
                "gpu%05d numbers 4-node chassis in rack order; chassis are dealt round robin to the leaf switches",
                chassis_round_robin,
                50,
                12.5};
    FabricShape fat_shape;  // NVLink inside a node only
    ModelShape gpt{175e9, 96, 12288, 2048, 1, 32, 2};
    scenario(fat, fat_shape, {"GPT-175B-like", gpt, "tp=8,pp=8,dp=256"}, 0.4);
    ModelShape llama_long{70e9, 80, 8192, 32768, 1, 16, 2};
    scenario(fat, fat_shape, {"Llama-70B-like, 32k context", llama_long, "tp=8,cp=2,pp=4,dp=128"}, 0.4);

    Cluster nvl{"NVL72 racks (18 trays x 4 GPUs share NVLink), InfiniBand between racks",
                1152,
                4,
                18,
                "trays named round robin across racks (tray n in rack n mod 64), as in Azure's GB200 block files",
                tray_round_robin,
                900,
                50};
    FabricShape rack_shape;
    rack_shape.islands_are_nvlink = true;
    ModelShape llama{70e9, 80, 8192, 4096, 1, 16, 2};
    scenario(nvl, rack_shape, {"Llama-70B-like", llama, "tp=8,pp=4,dp=36"}, 0.3);
    ModelShape moe{141e9, 56, 6144, 4096, 1, 16, 2};
    scenario(nvl, rack_shape, {"Mixtral-8x22B-like MoE", moe, "tp=2,ep=8,pp=4,dp=18"}, 0.3);
    scenario(fat, fat_shape, {"Mixtral-8x22B-like MoE", moe, "tp=2,ep=8,pp=4,dp=64"}, 0.4);

    std::printf("\n== Summary: bytes per step crossing islands, as multiples of the lower bound (target: layout "
                "placement <= 1.2x)\n");
    std::printf("   %-62s %-15s %8s %8s %9s %11s\n", "fabric: job layout", "order", "Slurm", "island", "placement",
                "bound GB");
    bool met = true;
    for (const Row& r : g_rows) {
        double q = r.bound > 0 ? r.placed / r.bound : (r.placed > 0 ? 1e9 : 1.0);
        if (q > 1.2) met = false;
        std::printf("   %-62s %-15s %7.2fx %7.2fx %8.3fx %11.1f\n", r.job.c_str(), r.order.c_str(),
                    r.bound > 0 ? r.slurm / r.bound : 0.0, r.bound > 0 ? r.island / r.bound : 0.0, q, r.bound / 1e9);
    }
    std::printf("   target <= 1.2x the bound in every row: %s\n", met ? "met" : "NOT MET");

    reliability();
    return 0;
}
