#include "step/slurm_rank_order.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "topo/core/env_names.hpp"

namespace gputopo::step {

namespace {

constexpr uint64_t kMaxNodes = uint64_t{1} << 20;

// The position of node `me` in `order` and whether the ranks before it add up to `first_rank`.
bool fits(const std::vector<uint64_t>& order, const TaskCounts& counts, uint64_t me, uint64_t first_rank,
          long& position) {
    uint64_t before = 0;
    for (size_t i = 0; i < order.size(); ++i) {
        if (order[i] == me) {
            position = static_cast<long>(i);
            return before == first_rank;
        }
        before += counts.at(order[i]);
    }
    return false;
}

std::optional<std::string> first_of(const Getenv& env, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (auto v = env(n); v && !v->empty()) return v;
    return std::nullopt;
}

}  // namespace

SlurmNodeOrder slurm_node_order(const Hostlist& nodes, const TaskCounts& counts, uint64_t me, uint64_t first_rank,
                                const std::vector<size_t>& island_of, bool prefer_topology) {
    SlurmNodeOrder out;
    const uint64_t n = nodes.count();
    if (n == 0 || n > kMaxNodes || counts.nodes() != n || me >= n) return out;
    std::vector<uint64_t> listed(n);
    std::iota(listed.begin(), listed.end(), uint64_t{0});
    long at_list = -1, at_topo = -1;
    const bool by_list = fits(listed, counts, me, first_rank, at_list);
    bool by_topo = false;
    std::vector<uint64_t> topo;
    if (island_of.size() == n) {
        topo = listed;
        std::stable_sort(topo.begin(), topo.end(), [&](uint64_t a, uint64_t b) { return island_of[a] < island_of[b]; });
        by_topo = topo != listed && fits(topo, counts, me, first_rank, at_topo);
    }
    if (by_topo && (!by_list || prefer_topology)) {
        out = {nodes.nth(topo.front()), at_topo, "topology"};
    } else if (by_list) {
        out = {nodes.nth(0), at_list, "node list"};
    }
    return out;
}

SlurmNodeOrder step_node_order(const Getenv& env, uint64_t first_rank, const IslandMap* topology,
                               bool prefer_topology) {
    try {
        auto list = first_of(env, {env::kSlurmStepNodelist, env::kSlurmJobNodelist, env::kSlurmNodelist});
        auto tpn = first_of(env, {env::kSlurmStepTasksPerNode, env::kSlurmTasksPerNode});
        auto id = first_of(env, {env::kSlurmNodeid});
        if (!list || !tpn || !id || id->size() > 9 || id->find_first_not_of("0123456789") != std::string::npos)
            return {};
        const Hostlist nodes = Hostlist::parse(*list);
        const TaskCounts counts = TaskCounts::parse(*tpn);
        if (nodes.count() > kMaxNodes) return {};
        std::vector<size_t> island_of;
        if (topology && !topology->empty()) {
            island_of.reserve(nodes.count());
            for (uint64_t i = 0; i < nodes.count(); ++i) island_of.push_back(topology->find(nodes.nth(i)));
        }
        return slurm_node_order(nodes, counts, std::stoull(*id), first_rank, island_of, prefer_topology);
    } catch (const std::exception&) {
        return {};
    }
}

bool slurm_order_keeps_islands(const SlurmPlacement& placement, unsigned long release, const Getenv& env,
                               const SlurmNodeOrder& order, const IslandMap& topology, const IslandMap& islands) {
    if (!placement.topology_order(release) || (order.order != "topology" && order.order != "node list")) return false;
    try {
        auto list = first_of(env, {env::kSlurmStepNodelist, env::kSlurmJobNodelist, env::kSlurmNodelist});
        if (!list) return false;
        const Hostlist nodes = Hostlist::parse(*list);
        const uint64_t n = nodes.count();
        if (n == 0 || n > kMaxNodes) return false;
        std::vector<uint64_t> topo(n);
        std::iota(topo.begin(), topo.end(), uint64_t{0});
        std::vector<size_t> slurm_island(n);
        std::vector<std::string> name(n);
        for (uint64_t i = 0; i < n; ++i) {
            name[i] = nodes.nth(i);
            slurm_island[i] = topology.find(name[i]);
        }
        std::stable_sort(topo.begin(), topo.end(),
                         [&](uint64_t a, uint64_t b) { return slurm_island[a] < slurm_island[b]; });
        // Ranks in node-list order count where the list itself goes block by block: with
        // BlockAsNodeRank Slurm writes the node list (and numbers SLURM_NODEID) in its
        // reordered node table's order (26.05 daemons: n[2,4,1,3] for b1=n[2,4] b2=n[1,3]).
        if (order.order == "node list" && !std::is_sorted(topo.begin(), topo.end())) return false;
        // Each island of `islands` one run in Slurm's order (unnamed nodes: alone).
        bool runs = true;
        std::vector<size_t> seen;
        size_t last = IslandMap::npos;
        for (uint64_t i : topo) {
            const size_t id = islands.find(name[i]);
            if (id == IslandMap::npos) {
                last = IslandMap::npos;
                continue;
            }
            if (id == last) continue;
            if (std::find(seen.begin(), seen.end(), id) != seen.end()) {
                runs = false;
                break;
            }
            seen.push_back(id);
            last = id;
        }
        if (runs) return true;
        // Segments: S consecutive nodes of one Slurm block in Slurm's order; one
        // that spans two islands (an unnamed node is an island of its own)
        // would be split by island ranks.
        const uint64_t s = placement.segment_size;
        if (s < 2) return false;
        uint64_t in_segment = 0;
        size_t block = IslandMap::npos, island = IslandMap::npos;
        for (uint64_t i : topo) {
            if (in_segment == s || slurm_island[i] != block) in_segment = 0;  // a new segment
            const size_t id = islands.find(name[i]);
            if (in_segment > 0 && (id == IslandMap::npos || id != island)) return true;
            block = slurm_island[i];
            island = id;
            ++in_segment;
        }
        return false;
    } catch (const std::exception&) {
        return false;
    }
}

bool slurm_order_keeps_islands(const Getenv& env, const SlurmNodeOrder& order, const IslandMap& topology,
                               const IslandMap& islands) {
    const Getenv process = [](const std::string& n) -> std::optional<std::string> {
        const char* v = std::getenv(n.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
    };
    return slurm_order_keeps_islands(read_slurm_placement(process, env), built_slurm_release(), env, order, topology,
                                     islands);
}

std::optional<uint64_t> node_first_rank(const Getenv& env) {
    auto number = [&](const char* name) -> std::optional<uint64_t> {
        const std::optional<std::string> v = env(name);
        if (!v || v->empty() || v->size() > 9 || v->find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        return std::stoull(*v);
    };
    const auto procid = number(env::kSlurmProcid), localid = number(env::kSlurmLocalid);
    if (!procid || !localid || *localid > *procid) return std::nullopt;
    return *procid - *localid;
}

#ifndef GPUTOPO_SLURM_VERSION_NUMBER
#define GPUTOPO_SLURM_VERSION_NUMBER 0
#endif
unsigned long built_slurm_release() { return GPUTOPO_SLURM_VERSION_NUMBER; }

}  // namespace gputopo::step
