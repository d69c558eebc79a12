#include "topo/fabric/layout_placement.hpp"

#include <algorithm>
#include <map>

#include "topo/core/errors.hpp"
#include "topo/fabric/layout_traffic.hpp"

namespace gputopo {

namespace {

constexpr uint32_t kUnset32 = ~uint32_t{0};
constexpr ParDim kPhysical[kParDims] = {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP};

struct Domain {
    uint64_t node;       // index in the node list
    uint32_t first;      // first local position
    uint32_t len;        // tasks in it
    uint32_t cursor = 0; // positions [first, first + cursor) are placed
};

struct Unit {
    uint64_t dom;    // index into the domain list
    uint32_t start;  // first local position in the domain (relative to Domain::first)
};

// Stages cut between islands when islands give `give` units in `order`,
// `stage` units per stage: the stage boundaries that do not fall on an
// island boundary, plus one per island that starts and ends inside a stage.
uint64_t stages_cut(const std::vector<uint64_t>& give, const std::vector<size_t>& order, uint64_t stage) {
    uint64_t pieces = 0, open = 0;
    for (size_t i : order) {
        if (give[i] == 0) continue;
        // pieces of stages this island has a part of
        const uint64_t first = open, last = open + give[i] - 1;
        pieces += last / stage - first / stage + 1;
        open += give[i];
    }
    const uint64_t stages = (open + stage - 1) / stage;
    return pieces - stages;  // each stage's pieces beyond its first
}

// The order chained stages visit the islands in (`give`: the units each
// island gives, `stage`: units per stage): step order, or packed so that
// fewer stages are cut between islands: with up to 8 islands every order (the
// first with the fewest cuts, so step order on a tie), else greedily: while a
// stage is open, the island whose units close it exactly (the largest such),
// else the largest island left. At most 8! * 8 steps, or O(islands log islands).
// Out of line: inlined, it slowed place_with_order's loops (bench_rank_order).
[[gnu::noinline]] std::vector<size_t> chain_order(const std::vector<uint64_t>& give, uint64_t stage, bool packed) {
    std::vector<size_t> order(give.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (!packed || stage == 0) return order;
    if (give.size() <= 8) {
        std::vector<size_t> best = order, cur = order;
        uint64_t least = stages_cut(give, order, stage);
        while (least > 0 && std::next_permutation(cur.begin(), cur.end())) {
            const uint64_t c = stages_cut(give, cur, stage);
            if (c < least) {
                least = c;
                best = cur;
            }
        }
        return best;
    }
    // Islands largest first (ties: step order), overall and per remainder
    // mod `stage`; each list is walked once, skipping islands already used.
    std::vector<size_t> by_size = order;
    std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) { return give[a] > give[b]; });
    std::map<uint64_t, std::vector<size_t>> by_rest;
    for (size_t i : by_size) by_rest[give[i] % stage].push_back(i);
    std::map<uint64_t, size_t> rest_next;
    std::vector<bool> used(give.size(), false);
    size_t size_next = 0;
    uint64_t open = 0;  // units of the open stage placed so far
    for (size_t k = 0; k < order.size(); ++k) {
        const uint64_t need = (stage - open) % stage;
        size_t pick = give.size();
        auto bucket = need != 0 ? by_rest.find(need) : by_rest.end();
        if (bucket != by_rest.end()) {
            size_t& at = rest_next[need];
            while (at < bucket->second.size() && used[bucket->second[at]]) ++at;
            if (at < bucket->second.size()) pick = bucket->second[at];
        }
        if (pick == give.size()) {
            while (used[by_size[size_next]]) ++size_next;
            pick = by_size[size_next];
        }
        used[pick] = true;
        order[k] = pick;
        open = (open + give[pick]) % stage;
    }
    return order;
}

// Serpentine (place_with_order): the second-outermost physical dimension of
// size > 1 (not tp) runs backwards where the outermost one's coordinate is
// odd. Rewrites each rank in place; false (nothing done) when fewer than two
// such dimensions.
bool snake_ranks(std::vector<uint32_t>& rank_of_slot, const ParallelLayout& layout, const ParDim* physical) {
    int outer = -1, inner = -1;
    for (int di = kParDims - 1; di >= 1 && inner < 0; --di)
        if (layout.size(physical[di]) > 1) (outer < 0 ? outer : inner) = di;
    if (inner < 1) return false;
    const auto o = static_cast<size_t>(physical[outer]), in = static_cast<size_t>(physical[inner]);
    for (uint32_t& r : rank_of_slot) {
        ParCoords c = layout.coords_of(r);
        if (c[o] % 2 == 0) continue;
        c[in] = layout.size(physical[inner]) - 1 - c[in];
        r = static_cast<uint32_t>(layout.rank_of(c));
    }
    return true;
}

}  // namespace

FabricShape parse_nvlink_domain(std::string_view text) {
    FabricShape s;
    if (text == "node") return s;
    if (text == "island") {
        s.islands_are_nvlink = true;
        return s;
    }
    uint64_t v = 0;
    bool ok = !text.empty() && text.size() <= 4;
    for (char c : text) {
        ok = ok && c >= '0' && c <= '9';
        if (ok) v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!ok || v == 0 || v > 1024)
        throw ParseError("bad NVLink domain '" + std::string(text) +
                         "': expected node (each node one NVLink domain), island (each island one, e.g. NVL72 racks) "
                         "or the GPUs per NVLink domain inside a node, 1 to 1024");
    s.nvlink_gpus = static_cast<uint32_t>(v);
    return s;
}

uint64_t LayoutPlacement::rank(uint64_t node_index, uint32_t local_position) const {
    if (node_index >= nodes())
        throw PlanError("node index " + std::to_string(node_index) + " is past the step's " +
                        std::to_string(nodes()) + " nodes");
    if (local_position >= tasks_on(node_index))
        throw PlanError("local task position " + std::to_string(local_position) + " on node " +
                        std::to_string(node_index) + ", which runs " + std::to_string(tasks_on(node_index)) +
                        " task(s) of the step");
    return rank_of_slot_[node_first_slot_[node_index] + local_position];
}

std::pair<uint64_t, uint32_t> LayoutPlacement::slot_of(uint64_t rank) const {
    auto it = std::find(rank_of_slot_.begin(), rank_of_slot_.end(), static_cast<uint32_t>(rank));
    if (rank >= world() || it == rank_of_slot_.end())
        throw PlanError("rank " + std::to_string(rank) + " is not below the step's " + std::to_string(world()) + " tasks");
    uint64_t slot = static_cast<uint64_t>(it - rank_of_slot_.begin());
    uint64_t node =
        static_cast<uint64_t>(std::upper_bound(node_first_slot_.begin(), node_first_slot_.end(), slot) -
                              node_first_slot_.begin()) - 1;
    return {node, static_cast<uint32_t>(slot - node_first_slot_[node])};
}

uint32_t LayoutPlacement::domain_gpus(uint64_t node_index) const {
    uint32_t t = tasks_on(node_index);
    return shape_.nvlink_gpus ? std::min(shape_.nvlink_gpus, t) : t;
}

uint64_t LayoutPlacement::domain_of(uint64_t node_index, uint32_t local_position) const {
    if (shape_.islands_are_nvlink) return node_island_[node_index];
    const uint32_t nd = shape_.nvlink_gpus ? shape_.nvlink_gpus : std::max<uint32_t>(1, tasks_on(node_index));
    return node_first_slot_[node_index] + local_position / nd;
}

std::vector<uint32_t> LayoutPlacement::island_of_rank() const {
    std::vector<uint32_t> out(rank_of_slot_.size());
    for (uint64_t j = 0; j < nodes(); ++j)
        for (uint64_t s = node_first_slot_[j]; s < node_first_slot_[j + 1]; ++s) out[rank_of_slot_[s]] = node_island_[j];
    return out;
}

LayoutPlacement place_with_order(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                                 const FabricShape& shape, ParallelLayout layout, const ParDim* physical,
                                 bool chain_stages, bool pack_islands, bool serpentine) {
    const uint64_t n = step_nodes.count();
    if (n != tasks.nodes())
        throw PlanError("the step's node list has " + std::to_string(n) + " nodes but the tasks per node cover " +
                        std::to_string(tasks.nodes()) + " (expected one count per node)");
    if (tasks.tasks() > kMaxLayoutWorld)
        throw PlanError("parallel layout '" + layout.str() + "': the step's " + std::to_string(tasks.tasks()) +
                        " tasks are more than the " + std::to_string(kMaxLayoutWorld) + " a layout is placed for");
    layout.resolve(tasks.tasks());

    LayoutPlacement p;
    p.layout_ = layout;
    p.shape_ = shape;
    p.stages_chained_ = chain_stages;
    for (int di = kParDims; di-- > 0;) {  // pp before dp in the physical order
        if (physical[di] == ParDim::DP) p.pipelines_first_ = false;
        if (physical[di] == ParDim::PP) p.pipelines_first_ = true;
    }
    if (layout.size(ParDim::DP) <= 1 || layout.size(ParDim::PP) <= 1) p.pipelines_first_ = false;
    const uint64_t world = tasks.tasks();

    // Nodes: tasks and island (islands in the order of their first node).
    p.node_first_slot_.assign(static_cast<size_t>(n + 1), 0);
    p.node_island_.assign(static_cast<size_t>(n), 0);
    std::vector<uint32_t> island_of_map_id(map.size(), kUnset32);
    {
        uint64_t j = 0, slot = 0;
        size_t run = 0;
        uint64_t used = 0;
        const auto& runs = tasks.runs();
        step_nodes.for_each_host([&](size_t, const HostRange& r, uint64_t v) {
            while (run < runs.size() && used == runs[run].second) {
                ++run;
                used = 0;
            }
            uint32_t t = run < runs.size() ? runs[run].first : 0;
            ++used;
            size_t k = map.find(r, v);
            uint32_t isl;
            if (k != IslandMap::npos && island_of_map_id[k] != kUnset32) {
                isl = island_of_map_id[k];
            } else {
                isl = static_cast<uint32_t>(p.island_first_node_.size());
                p.island_first_node_.push_back(j);
                p.island_map_id_.push_back(k);
                if (k != IslandMap::npos) island_of_map_id[k] = isl;
            }
            p.node_island_[static_cast<size_t>(j)] = isl;
            p.node_first_slot_[static_cast<size_t>(j)] = slot;
            slot += t;
            ++j;
        });
        p.node_first_slot_[static_cast<size_t>(n)] = slot;
    }
    const size_t islands = p.island_first_node_.size();

    // NVLink domains, island by island, nodes in node-list order within one.
    std::vector<uint64_t> island_dom_start(islands + 1, 0);
    for (uint64_t j = 0; j < n; ++j) {
        uint32_t t = p.tasks_on(j);
        uint32_t nd = shape.nvlink_gpus ? shape.nvlink_gpus : std::max<uint32_t>(1, t);
        island_dom_start[p.node_island_[j] + 1] += (t + nd - 1) / nd;
    }
    for (size_t i = 0; i < islands; ++i) island_dom_start[i + 1] += island_dom_start[i];
    std::vector<Domain> doms(static_cast<size_t>(island_dom_start[islands]));
    {
        std::vector<uint64_t> fill(island_dom_start.begin(), island_dom_start.end() - 1);
        for (uint64_t j = 0; j < n; ++j) {
            uint32_t t = p.tasks_on(j);
            uint32_t nd = shape.nvlink_gpus ? shape.nvlink_gpus : std::max<uint32_t>(1, t);
            for (uint32_t f = 0; f < t; f += nd) doms[fill[p.node_island_[j]]++] = {j, f, std::min(nd, t - f), 0};
        }
    }
    uint32_t nd_eff = 0;  // the largest NVLink domain inside a node
    for (const Domain& d : doms) nd_eff = std::max(nd_eff, d.len);

    // Block sizes: prefix products of the physical order, distinct, > 1.
    std::vector<uint64_t> levels;
    {
        uint64_t s = 1;
        for (int di = 0; di < kParDims; ++di) {
            const ParDim d = physical[di];
            s *= layout.size(d);
            if (s > 1 && (levels.empty() || levels.back() != s)) levels.push_back(s);
        }
    }
    const uint64_t inner_block = layout.size(ParDim::TP) * layout.size(ParDim::CP) * layout.size(ParDim::EP);
    auto node_level = [&](uint64_t s) { return !shape.islands_are_nvlink && s <= nd_eff; };

    std::vector<uint32_t> seq;
    seq.reserve(static_cast<size_t>(world));
    auto take = [&](Domain& d, uint64_t count) {
        uint64_t base = p.node_first_slot_[d.node] + d.first + d.cursor;
        for (uint64_t k = 0; k < count; ++k) seq.push_back(static_cast<uint32_t>(base + k));
        d.cursor += static_cast<uint32_t>(count);
    };
    for (size_t li = levels.size(); li-- > 0;) {
        const uint64_t s = levels[li];
        if (node_level(s)) {
            for (Domain& d : doms)
                while (d.len - d.cursor >= s) take(d, s);
            continue;
        }
        // Island-level blocks made of whole node-level blocks of size u.
        uint64_t u = 1;
        for (size_t lj = 0; lj < li; ++lj)
            if (node_level(levels[lj]) && s % levels[lj] == 0) u = levels[lj];
        const uint64_t per = s / u;
        if (s > inner_block && chain_stages && (li == 0 || levels[li - 1] <= inner_block)) {
            // Chained stages: every island's whole tp*cp*ep blocks (in units
            // of u, which divides tp*cp*ep), islands in order, as many as make
            // whole blocks of s; the rest goes down to the inner levels.
            const uint64_t step = std::max<uint64_t>(1, inner_block / u);
            std::vector<uint64_t> give(islands, 0);
            uint64_t total = 0;
            for (size_t i = 0; i < islands; ++i) {
                uint64_t units = 0;
                for (uint64_t k = island_dom_start[i]; k < island_dom_start[i + 1]; ++k)
                    units += (doms[k].len - doms[k].cursor) / u;
                give[i] = units / step * step;
                total += give[i];
            }
            uint64_t left = total / per * per;
            const std::vector<size_t> chain = chain_order(give, per, pack_islands);
            for (size_t i : chain) {
                if (left == 0) break;
                uint64_t need = std::min(give[i], left);
                left -= need;
                for (uint64_t k = island_dom_start[i]; k < island_dom_start[i + 1] && need > 0; ++k) {
                    uint64_t have = std::min<uint64_t>((doms[k].len - doms[k].cursor) / u, need);
                    take(doms[k], have * u);
                    need -= have;
                }
            }
            continue;
        }
        if (s > inner_block) {
            // Stages (and the whole job) only where one fits in an island;
            // the rest goes down to the inner levels.
            for (size_t i = 0; i < islands; ++i) {
                uint64_t units = 0;
                for (uint64_t k = island_dom_start[i]; k < island_dom_start[i + 1]; ++k)
                    units += (doms[k].len - doms[k].cursor) / u;
                uint64_t need = units / per * per;
                for (uint64_t k = island_dom_start[i]; k < island_dom_start[i + 1] && need > 0; ++k) {
                    uint64_t have = std::min<uint64_t>((doms[k].len - doms[k].cursor) / u, need);
                    take(doms[k], have * u);
                    need -= have;
                }
            }
            continue;
        }
        // TP/CP/EP blocks larger than a node's NVLink domain: whole blocks in
        // each island, and an island's remainder completed by the remainders of
        // the islands after it (a block that must straddle spans neighbouring
        // islands, so the DP and PP groups around it stay where they were);
        // an island's whole blocks wait while a block is open, so that every
        // block starts at a multiple of s. A block left open at the end is not
        // taken: the lower levels place its units.
        // Units: whole blocks of the next level down (node-level ones cut per
        // NVLink domain, island-level ones from the island's unused GPUs in
        // order), so that a straddling block is made of whole smaller blocks.
        const uint64_t uu = li > 0 ? levels[li - 1] : 1;
        const bool unit_in_node = li > 0 && node_level(uu);
        const uint64_t uper = s / uu;
        std::vector<std::pair<uint32_t, uint32_t>> pool;  // (domain, position in it) of each unit's GPUs
        std::vector<uint64_t> open, waiting, units;          // offsets into pool
        std::vector<uint32_t> end_at(doms.size(), 0);
        for (size_t k = 0; k < doms.size(); ++k) end_at[k] = doms[k].cursor;
        auto emit = [&](const std::vector<uint64_t>& v, size_t from, size_t to) {
            for (size_t q = from; q < to; ++q)
                for (uint64_t k = 0; k < uu; ++k) {
                    auto [dom, pos] = pool[v[q] + k];
                    const Domain& d = doms[dom];
                    seq.push_back(static_cast<uint32_t>(p.node_first_slot_[d.node] + d.first + pos));
                    end_at[dom] = std::max<uint32_t>(end_at[dom], pos + 1);
                }
        };
        for (size_t i = 0; i < islands; ++i) {
            units.clear();
            uint64_t chunk = 0;
            for (uint64_t k = island_dom_start[i]; k < island_dom_start[i + 1]; ++k) {
                if (unit_in_node) chunk = 0;
                for (uint32_t pos = doms[k].cursor; pos < doms[k].len; ++pos) {
                    if (unit_in_node && doms[k].len - pos < uu && chunk == 0) break;
                    if (chunk == 0) units.push_back(pool.size());
                    pool.push_back({static_cast<uint32_t>(k), pos});
                    if (++chunk == uu) chunk = 0;
                }
            }
            if (chunk != 0) {  // a partial unit at the island's end: not a unit
                pool.resize(pool.size() - chunk);
                units.pop_back();
            }
            const size_t whole = units.size() / uper * uper, rest = units.size() - whole;
            if (open.empty()) {
                emit(units, 0, whole);
                open.assign(units.begin() + static_cast<std::ptrdiff_t>(whole), units.end());
            } else if (open.size() + rest >= uper) {
                const size_t need = uper - open.size();
                open.insert(open.end(), units.begin() + static_cast<std::ptrdiff_t>(whole),
                            units.begin() + static_cast<std::ptrdiff_t>(whole + need));
                emit(open, 0, open.size());
                emit(waiting, 0, waiting.size());
                waiting.clear();
                emit(units, 0, whole);
                open.assign(units.begin() + static_cast<std::ptrdiff_t>(whole + need), units.end());
            } else {
                open.insert(open.end(), units.begin() + static_cast<std::ptrdiff_t>(whole), units.end());
                waiting.insert(waiting.end(), units.begin(), units.begin() + static_cast<std::ptrdiff_t>(whole));
            }
            if (open.size() == uper) {
                emit(open, 0, open.size());
                open.clear();
            }
        }
        emit(waiting, 0, waiting.size());
        for (size_t k = 0; k < doms.size(); ++k) doms[k].cursor = end_at[k];
    }
    for (Domain& d : doms) take(d, d.len - d.cursor);  // what no level took: these groups straddle

    // Physical index -> coordinates (tp fastest ... pp) -> the framework's rank.
    p.rank_of_slot_.assign(static_cast<size_t>(world), 0);
    ParCoords c{};
    for (uint64_t pos = 0; pos < world; ++pos) {
        p.rank_of_slot_[seq[pos]] = static_cast<uint32_t>(layout.rank_of(c));
        for (int di = 0; di < kParDims; ++di) {
            const ParDim d = physical[di];
            auto& x = c[static_cast<size_t>(d)];
            if (++x < layout.size(d)) break;
            x = 0;
        }
    }
    if (serpentine) snake_ranks(p.rank_of_slot_, layout, physical);
    return p;
}

LayoutPlacement place_layout(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                             const FabricShape& shape, ParallelLayout layout, const EdgeBytes* weights) {
    LayoutPlacement best = place_with_order(step_nodes, tasks, map, shape, layout, kPhysical);
    if (!weights) return best;
    auto consider = [&](LayoutPlacement p, double& best_cost) {
        const double c = crossing_bytes(best.layout(), p.island_of_rank(), *weights).total();
        if (c < best_cost) {
            best_cost = c;
            best = std::move(p);
        }
    };
    // With a model: every physical order with TP innermost (at most 24 of the
    // other four; orders that differ only in dimensions of size 1 once), each
    // with whole stages first and with chained stages, the one that moves the
    // fewest bytes across islands; ties keep the earlier, the default order
    // (not chained) first.
    const ParallelLayout& l = best.layout();
    double best_cost = crossing_bytes(l, best.island_of_rank(), *weights).total();
    ParDim rest[4] = {ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP};
    std::vector<std::vector<ParDim>> tried;
    do {
        std::vector<ParDim> key;
        for (ParDim d : rest)
            if (l.size(d) > 1) key.push_back(d);
        if (std::find(tried.begin(), tried.end(), key) != tried.end()) continue;
        const bool first = tried.empty();
        tried.push_back(key);
        const ParDim order[kParDims] = {ParDim::TP, rest[0], rest[1], rest[2], rest[3]};
        if (!first) consider(place_with_order(step_nodes, tasks, map, shape, layout, order), best_cost);
        // The serpentine candidate is the straight one with its ranks rewritten
        // (snake_ranks), not placed again; none where it would be the same.
        for (bool packed : {false, true}) {
            LayoutPlacement straight = place_with_order(step_nodes, tasks, map, shape, layout, order, true, packed);
            LayoutPlacement snake = straight;
            const bool differs = snake_ranks(snake.rank_of_slot_, snake.layout_, order);
            consider(std::move(straight), best_cost);
            if (differs) consider(std::move(snake), best_cost);
        }
    } while (std::next_permutation(std::begin(rest), std::end(rest)));
    // The cheapest tiled candidate, if one moves fewer bytes; both refined
    // (a refined candidate can beat a refined cheaper one), the cheaper kept.
    LayoutPlacement tiled = best;
    double tiled_cost = best_cost;
    const bool has_tiled = best_tiled(tiled, *weights, tiled_cost, kTileBudget);
    refine_by_swaps(best, *weights, kRefineBudget);
    if (has_tiled) {
        refine_by_swaps(tiled, *weights, kRefineBudget);
        if (crossing_bytes(l, tiled.island_of_rank(), *weights).total() <
            crossing_bytes(l, best.island_of_rank(), *weights).total())
            return tiled;
    }
    return best;
}

uint64_t layout_rank(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                     const FabricShape& shape, const ParallelLayout& layout, std::string_view node,
                     uint32_t local_position, const EdgeBytes* weights) {
    std::optional<uint64_t> me = step_nodes.index_of(node);
    if (!me)
        throw PlanError("node '" + std::string(node) + "' is not in the step's node list" +
                        (step_nodes.count() <= 64 ? " '" + step_nodes.ranged() + "'" : std::string()));
    LayoutPlacement p = place_layout(step_nodes, tasks, map, shape, layout, weights);
    return p.rank(*me, local_position);
}

std::string island_name(const LayoutPlacement& p, const Hostlist& step_nodes, const IslandMap& map, uint64_t island) {
    if (p.island_known(island)) return map.island(p.island_map_id(island)).name;
    return step_nodes.nth(p.island_first_node(island));
}

std::vector<GroupSpread> group_spread(const LayoutPlacement& p, size_t max_examples) {
    const ParallelLayout& l = p.layout();
    const uint64_t world = p.world();
    std::vector<uint64_t> node_of_rank(static_cast<size_t>(world));
    std::vector<uint32_t> local_of_rank(static_cast<size_t>(world));
    for (uint64_t j = 0; j < p.nodes(); ++j)
        for (uint32_t t = 0; t < p.tasks_on(j); ++t) {
            uint64_t r = p.rank(j, t);
            node_of_rank[r] = j;
            local_of_rank[r] = t;
        }
    uint32_t nd_eff = 0;
    uint64_t biggest_island = 0;
    {
        std::vector<uint64_t> gpus(static_cast<size_t>(p.num_islands()), 0);
        for (uint64_t j = 0; j < p.nodes(); ++j) {
            nd_eff = std::max(nd_eff, p.domain_gpus(j));
            gpus[p.island_of_node(j)] += p.tasks_on(j);
        }
        for (uint64_t g : gpus) biggest_island = std::max(biggest_island, g);
    }

    std::vector<GroupSpread> out;
    uint64_t block = 1;  // physical block of the inner dimensions so far
    std::vector<uint64_t> ids;
    for (ParDim d : kPhysical) {
        const uint64_t size = l.size(d);
        const bool inner = d == ParDim::TP || d == ParDim::CP || d == ParDim::EP;
        if (inner) block *= size;
        if (size <= 1) continue;
        GroupSpread g;
        g.dim = d;
        g.size = size;
        g.groups = world / size;
        g.min_islands = ~uint64_t{0};
        const uint64_t stride = l.stride(d);
        for (uint64_t base = 0; base < world; ++base) {
            if ((base / stride) % size != 0) continue;
            ids.clear();
            for (uint64_t k = 0; k < size; ++k) ids.push_back(p.island_of_node(node_of_rank[base + k * stride]));
            std::sort(ids.begin(), ids.end());
            uint64_t islands = static_cast<uint64_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
            g.island_spans += islands;
            g.min_islands = std::min(g.min_islands, islands);
            g.max_islands = std::max(g.max_islands, islands);
            bool straddles = islands > 1;
            if (inner) {
                ids.clear();
                for (uint64_t k = 0; k < size; ++k) {
                    uint64_t r = base + k * stride;
                    ids.push_back(p.domain_of(node_of_rank[r], local_of_rank[r]));
                }
                std::sort(ids.begin(), ids.end());
                straddles = std::unique(ids.begin(), ids.end()) - ids.begin() > 1;
            }
            if (straddles) {
                ++g.straddling;
                if (g.examples.size() < max_examples) g.examples.push_back(base);
            }
        }
        if (g.groups == 0) g.min_islands = 0;
        if (inner && g.straddling > 0) {
            std::string what = "the " + std::to_string(block) + "-GPU blocks of tp";
            if (d != ParDim::TP) what += std::string("..") + par_dim_name(d);
            if (p.shape().islands_are_nvlink && block > biggest_island)
                g.why = what + " are larger than the step's largest island (" + std::to_string(biggest_island) +
                        " GPUs)";
            else if (!p.shape().islands_are_nvlink && block > nd_eff)
                g.why = what + " are larger than one NVLink domain (" + std::to_string(nd_eff) +
                        " GPUs per node domain; islands are not NVLink domains)";
            else
                g.why = what + " do not divide the GPUs the step has in each NVLink domain; the GPUs left over "
                               "make groups with those of the next islands";
        }
        out.push_back(std::move(g));
    }
    return out;
}

std::string straddle_summary(const LayoutPlacement& p) {
    std::string out;
    for (const GroupSpread& g : group_spread(p, 4)) {
        if (g.straddling == 0 || g.why.empty()) continue;
        if (!out.empty()) out += "; ";
        out += std::string(par_dim_name(g.dim)) + " groups straddle NVLink domains: " + std::to_string(g.straddling) +
               " of " + std::to_string(g.groups) + " (first ranks ";
        for (size_t k = 0; k < g.examples.size(); ++k) out += (k ? ", " : "") + std::to_string(g.examples[k]);
        out += "): " + g.why;
    }
    return out;
}

}  // namespace gputopo
