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

struct Model {
    const char* name;
    double params;        // parameters
    int layers, hidden, seq, micro_batch, microbatches;
    int tp, pp, dp;
};

enum class Layout { TpDpPp, TpPpDp };  // Megatron default (pp slowest) / replica contiguous
const char* layout_name(Layout l) { return l == Layout::TpDpPp ? "tp-dp-pp (Megatron default)" : "tp-pp-dp (replica contiguous)"; }

struct Coord {
    int tp, pp, dp;
};
int rank_of(const Model& m, Layout l, int tp, int pp, int dp) {
    return l == Layout::TpDpPp ? tp + m.tp * (dp + m.dp * pp) : tp + m.tp * (pp + m.pp * dp);
}

struct Bytes {
    double tp = 0, pp = 0, dp = 0;
    double total() const { return tp + pp + dp; }
};

// Per-collective sizes (bytes), bf16.
struct Sizes {
    double act;          // one micro-batch activation: mb * seq * hidden * 2
    double tp_per_edge;  // per TP ring edge per step
    double pp_per_edge;  // per pipeline edge per step
    double dp_per_edge;  // per DP ring edge per step
};
Sizes sizes_of(const Model& m) {
    Sizes s;
    s.act = double(m.micro_batch) * m.seq * m.hidden * 2;
    const int layers_per_stage = m.layers / m.pp;
    // Megatron TP: 2 all-reduces forward + 2 backward per layer, per micro-batch; ring edge carries 2(T-1)/T.
    s.tp_per_edge = m.tp > 1 ? 4.0 * layers_per_stage * m.microbatches * 2.0 * (m.tp - 1) / m.tp * s.act : 0;
    // Pipeline: activation forward + gradient backward per micro-batch, each TP rank its 1/T slice.
    s.pp_per_edge = 2.0 * m.microbatches * s.act / m.tp;
    // Data parallel: ring all-reduce of the rank's gradient shard, 2(D-1)/D of it per edge.
    const double shard = m.params / (double(m.tp) * m.pp) * 2;
    s.dp_per_edge = m.dp > 1 ? 2.0 * (m.dp - 1) / m.dp * shard : 0;
    return s;
}

// Bytes crossing islands when rank r runs on the island island_of_rank[r].
Bytes crossing(const Model& m, Layout l, const std::vector<int>& island_of_rank, const Sizes& s) {
    Bytes b;
    auto ring = [&](const std::vector<int>& ranks, double per_edge, double& acc) {
        if (ranks.size() < 2) return;
        for (size_t i = 0; i < ranks.size(); ++i) {
            int a = ranks[i], c = ranks[(i + 1) % ranks.size()];
            if (island_of_rank[size_t(a)] != island_of_rank[size_t(c)]) acc += per_edge;
        }
    };
    std::vector<int> g;
    for (int pp = 0; pp < m.pp; ++pp)
        for (int dp = 0; dp < m.dp; ++dp) {
            g.clear();
            for (int tp = 0; tp < m.tp; ++tp) g.push_back(rank_of(m, l, tp, pp, dp));
            ring(g, s.tp_per_edge, b.tp);
        }
    for (int tp = 0; tp < m.tp; ++tp)
        for (int pp = 0; pp < m.pp; ++pp) {
            g.clear();
            for (int dp = 0; dp < m.dp; ++dp) g.push_back(rank_of(m, l, tp, pp, dp));
            ring(g, s.dp_per_edge, b.dp);
        }
    for (int tp = 0; tp < m.tp; ++tp)
        for (int dp = 0; dp < m.dp; ++dp)
            for (int pp = 0; pp + 1 < m.pp; ++pp) {
                int a = rank_of(m, l, tp, pp, dp), c = rank_of(m, l, tp, pp + 1, dp);
                if (island_of_rank[size_t(a)] != island_of_rank[size_t(c)]) b.pp += s.pp_per_edge;
            }
    return b;
}

// Analytic lower bound over every placement of the job's ranks on the GPUs it
// got (g_i GPUs in island i), each collective bounded on its own:
//  a group of K GPUs that cannot sit in one island crosses >= 2 ring edges
//  (TP, DP) or >= 1 pipeline edge (PP); a DP ring that needs k_min >= 2
//  islands (its members on distinct TP groups) crosses >= k_min edges.
//  Groups that can sit whole in islands:
//  TP groups: sum floor(g_i / T); DP groups come in blocks of D*T GPUs (one
//  stage's T DP rings share the same D TP groups): T * sum floor(g_i / (D*T));
//  pipelines come in replicas of T*P GPUs: T * sum floor(g_i / (T*P)).
Bytes lower_bound(const Model& m, const std::vector<long>& gpus_per_island, const Sizes& s) {
    auto fit = [&](long unit) {
        long n = 0;
        for (long g : gpus_per_island) n += g / unit;
        return n;
    };
    Bytes b;
    long tp_groups = long(m.pp) * m.dp;
    if (m.tp > 1) b.tp = double(std::max(0L, tp_groups - fit(m.tp))) * 2 * s.tp_per_edge;
    long dp_rings = long(m.tp) * m.pp;
    // One DP ring has one member in each of D TP groups; island i holds at most
    // ceil(g_i / T) of them, so the ring spans at least k_min islands and
    // crosses at least k_min edges when k_min >= 2.
    std::vector<long> caps;
    for (long g : gpus_per_island) caps.push_back((g + m.tp - 1) / m.tp);
    std::sort(caps.rbegin(), caps.rend());
    long k_min = 0, held = 0;
    for (long c : caps) {
        if (held >= m.dp) break;
        held += c;
        ++k_min;
    }
    if (m.dp > 1) {
        if (k_min >= 2)
            b.dp = double(dp_rings) * double(k_min) * s.dp_per_edge;
        else
            b.dp = double(std::max(0L, dp_rings - m.tp * fit(long(m.dp) * m.tp))) * 2 * s.dp_per_edge;
    }
    long pipelines = long(m.tp) * m.dp;
    if (m.pp > 1) b.pp = double(std::max(0L, pipelines - m.tp * fit(long(m.tp) * m.pp))) * 1 * s.pp_per_edge;
    return b;
}

std::string name_of(int n) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "gpu%05d", n);
    return buf;
}

void scenario(const Cluster& c, const Model& m, double busy_fraction) {
    const int job_gpus = m.tp * m.pp * m.dp;
    const int job_nodes = job_gpus / c.gpus_per_node;
    const int islands = c.nodes / c.nodes_per_island;
    std::printf("\n== %s: %d nodes x %d GPUs, %d islands of %d nodes (%d GPUs), %.0f GB/s per GPU inside, %.1f GB/s "
                "between (%.0f:1)\n",
                c.name, c.nodes, c.gpus_per_node, islands, c.nodes_per_island, c.nodes_per_island * c.gpus_per_node,
                c.in_gbs, c.out_gbs, c.in_gbs / c.out_gbs);
    std::printf("   naming: %s\n", c.naming);
    std::printf("   job: %s, %d GPUs = TP %d x PP %d x DP %d on %d nodes; %.0fB params, %d layers, hidden %d, seq %d, "
                "micro-batch %d, %d micro-batches/step\n",
                m.name, job_gpus, m.tp, m.pp, m.dp, job_nodes, m.params / 1e9, m.layers, m.hidden, m.seq,
                m.micro_batch, m.microbatches);

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
    std::vector<long> per_island(static_cast<size_t>(islands), 0);
    for (int n : nodes) per_island[size_t(c.island_of(n, c))] += c.gpus_per_node;
    int touched = 0;
    for (long g : per_island) touched += g > 0;
    std::printf("   allocation: %d%% of the cluster busy; the job's %d nodes are the first free ones in name order "
                "and touch %d islands\n",
                int(busy_fraction * 100), job_nodes, touched);

    // Slurm's order: ranks block-distributed over the node list in name order.
    std::vector<int> slurm_island(static_cast<size_t>(job_gpus));
    for (int r = 0; r < job_gpus; ++r) slurm_island[size_t(r)] = c.island_of(nodes[size_t(r / c.gpus_per_node)], c);

    // gputopo's order: the plugin's code on the same node list and island map.
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
    std::vector<NodePlacement> table =
        place_step(step, TaskCounts::uniform(step.count(), uint32_t(c.gpus_per_node)), map);
    std::vector<int> island_island(static_cast<size_t>(job_gpus));
    for (const NodePlacement& row : table) {
        int isl = std::stoi(row.island.substr(6));
        for (uint32_t t = 0; t < row.tasks; ++t) island_island[size_t(row.first_rank + t)] = isl;
    }

    Sizes s = sizes_of(m);
    std::printf("   per-edge bytes per step: TP ring %.3g (4 x %d layers x %d mb x 2(T-1)/T x act %.3g), PP %.3g "
                "(2 x %d mb x act/T), DP ring %.3g (2(D-1)/D x shard %.3g)\n",
                s.tp_per_edge, m.layers / m.pp, m.microbatches, s.act, s.pp_per_edge, m.microbatches, s.dp_per_edge,
                m.params / (double(m.tp) * m.pp) * 2);
    Bytes lb = lower_bound(m, per_island, s);
    for (Layout l : {Layout::TpDpPp, Layout::TpPpDp}) {
        Bytes a = crossing(m, l, slurm_island, s);
        Bytes b = crossing(m, l, island_island, s);
        std::printf("   layout %s\n", layout_name(l));
        std::printf("     %-22s %12s %12s %12s %12s %10s\n", "order", "TP GB", "PP GB", "DP GB", "total GB", "vs bound");
        auto row = [&](const char* what, const Bytes& x) {
            std::printf("     %-22s %12.1f %12.1f %12.1f %12.1f %10s\n", what, x.tp / 1e9, x.pp / 1e9, x.dp / 1e9,
                        x.total() / 1e9,
                        lb.total() > 0 ? (std::to_string(x.total() / lb.total()).substr(0, 6) + "x").c_str()
                                       : (x.total() > 0 ? "inf" : "1x"));
        };
        row("Slurm (name order)", a);
        row("gputopo island order", b);
        row("analytic lower bound", lb);
        std::printf("     Slurm / island order = %.2fx", b.total() > 0 ? a.total() / b.total() : 0.0);
        // Time to push the crossing bytes through the islands' uplinks.
        double uplink = double(touched) * c.nodes_per_island * c.gpus_per_node * c.out_gbs * 1e9;
        std::printf("; through the %d islands' uplinks (%.0f GB/s in all): %.3f s vs %.3f s per step\n", touched,
                    uplink / 1e9, a.total() / uplink, b.total() / uplink);
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
    std::printf("bench_island_sim: bytes per step crossing island boundaries, Slurm order vs island order vs bound\n");
    Cluster fat{"fat tree, 1,024-GPU islands, 4:1 between islands",
                12500,
                8,
                128,
                "gpu%05d numbers 4-node chassis in rack order; chassis are dealt round robin to the leaf switches",
                chassis_round_robin,
                50,
                12.5};
    Model gpt{"GPT-175B-like", 175e9, 96, 12288, 2048, 1, 32, 8, 8, 256};
    scenario(fat, gpt, 0.4);

    Cluster nvl{"NVL72 racks (18 trays x 4 GPUs share NVLink), InfiniBand between racks",
                1152,
                4,
                18,
                "trays named round robin across racks (tray n in rack n mod 64), as in Azure's GB200 block files",
                tray_round_robin,
                900,
                50};
    Model llama{"Llama-70B-like", 70e9, 80, 8192, 4096, 1, 16, 8, 4, 36};
    scenario(nvl, llama, 0.3);

    reliability();
    return 0;
}
