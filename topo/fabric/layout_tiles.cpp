// Tiled candidates of a layout placement (see layout_placement.hpp,
// best_tiled): the TP groups of a placement that keeps every TP group inside
// one island are dealt to the islands again, along a path through the grid of
// their (cp, ep, dp, pp) coordinates that visits it tile by tile.
#include <algorithm>
#include <numeric>

#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"

namespace gputopo {

namespace {

constexpr ParDim kOuter[4] = {ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP};
constexpr size_t kAllOrders = 5;  // islands up to which every order of their sizes is tried

// A serpentine walk over a box, fastest digit first: digit j runs backwards
// while the digits above it sum to an odd number, so that two consecutive
// points differ by one step in one digit.
template <class F>
void snake_walk(const std::vector<uint64_t>& sizes, F&& visit) {
    const size_t n = sizes.size();
    std::vector<uint64_t> raw(n, 0), v(n, 0);
    for (uint64_t s : sizes)
        if (s == 0) return;
    while (true) {
        uint64_t above = 0;
        for (size_t j = n; j-- > 0;) {
            v[j] = above % 2 ? sizes[j] - 1 - raw[j] : raw[j];
            above += raw[j];
        }
        visit(v);
        size_t j = 0;
        while (j < n && ++raw[j] == sizes[j]) raw[j++] = 0;
        if (j == n) return;
    }
}

// The layout's TP groups as cells of the grid of the outer dimensions of
// size > 1, and where the base placement has each one's GPUs.
struct Cells {
    std::vector<ParDim> dims;          // outer dimensions of size > 1 (kOuter order)
    std::vector<uint64_t> size;        // their sizes
    std::vector<uint64_t> stride;      // cell index = sum coordinate * stride (dims[0] fastest)
    uint64_t count = 0;
    std::vector<uint32_t> island_groups;  // per island: its TP groups in the base placement
    std::vector<std::vector<uint64_t>> island_sets;  // per island: the first slot of each of its groups' slot sets, in slot order
};


}  // namespace

bool best_tiled(LayoutPlacement& p, const EdgeBytes& w, double& best_cost, uint64_t budget) {
    const ParallelLayout& l = p.layout_;
    const uint64_t world = p.world(), T = l.size(ParDim::TP);
    if (world < 2) return false;
    Cells cl;
    for (ParDim d : kOuter)
        if (l.size(d) > 1) {
            cl.dims.push_back(d);
            cl.size.push_back(l.size(d));
        }
    if (cl.dims.empty()) return false;
    cl.count = world / T;
    cl.stride.assign(cl.dims.size(), 1);
    for (size_t j = 1; j < cl.dims.size(); ++j) cl.stride[j] = cl.stride[j - 1] * cl.size[j - 1];

    // Where the base has each TP group: one island, or no candidate.
    std::vector<uint32_t> island_of_slot(static_cast<size_t>(world));
    for (uint64_t j = 0; j < p.nodes(); ++j)
        for (uint64_t s = p.node_first_slot_[j]; s < p.node_first_slot_[j + 1]; ++s) island_of_slot[s] = p.node_island_[j];
    std::vector<uint32_t> slot_of_rank(static_cast<size_t>(world));
    for (uint64_t s = 0; s < world; ++s) slot_of_rank[p.rank_of_slot_[s]] = static_cast<uint32_t>(s);
    const uint64_t st = l.stride(ParDim::TP);
    const size_t islands = p.num_islands();
    std::vector<uint64_t> group_first_slot(static_cast<size_t>(cl.count));
    cl.island_groups.assign(islands, 0);
    cl.island_sets.assign(islands, {});
    {
        std::vector<std::pair<uint64_t, uint64_t>> firsts;  // (first slot, cell)
        for (uint64_t r = 0; r < world; ++r) {
            if ((r / st) % T) continue;
            const uint32_t isl = island_of_slot[slot_of_rank[r]];
            uint64_t first = slot_of_rank[r];
            for (uint64_t k = 1; k < T; ++k) {
                const uint32_t s = slot_of_rank[r + k * st];
                if (island_of_slot[s] != isl) return false;
                first = std::min<uint64_t>(first, s);
            }
            firsts.push_back({first, r});
        }
        std::sort(firsts.begin(), firsts.end());
        for (const auto& f : firsts) {
            const uint32_t isl = island_of_slot[f.first];
            ++cl.island_groups[isl];
            cl.island_sets[isl].push_back(f.second);  // the base rank (tp = 0) of the group the base put there
        }
    }

    // Island orders along the path: with up to kAllOrders islands (of TP
    // groups), every order of their sizes (islands of one size are
    // interchangeable); else step order, largest first, and the two largest
    // at the two ends (the pipeline's end stages whole in the largest
    // islands, the smaller ones in blocks between).
    std::vector<std::vector<uint32_t>> island_orders;
    {
        std::vector<uint32_t> by_size;
        for (uint32_t i = 0; i < islands; ++i)
            if (cl.island_groups[i] > 0) by_size.push_back(i);
        std::stable_sort(by_size.begin(), by_size.end(),
                         [&](uint32_t a, uint32_t b) { return cl.island_groups[a] > cl.island_groups[b]; });
        if (by_size.size() <= kAllOrders) {
            std::vector<uint32_t> sizes;
            for (uint32_t i : by_size) sizes.push_back(cl.island_groups[i]);
            std::sort(sizes.begin(), sizes.end());
            do {  // each size taken by its islands in size-then-step order
                std::vector<uint32_t> order;
                std::vector<bool> taken(by_size.size(), false);
                for (uint32_t want : sizes)
                    for (size_t k = 0; k < by_size.size(); ++k)
                        if (!taken[k] && cl.island_groups[by_size[k]] == want) {
                            taken[k] = true;
                            order.push_back(by_size[k]);
                            break;
                        }
                island_orders.push_back(order);
            } while (std::next_permutation(sizes.begin(), sizes.end()));
        } else {
            std::vector<uint32_t> step;
            for (uint32_t i = 0; i < islands; ++i)
                if (cl.island_groups[i] > 0) step.push_back(i);
            island_orders.push_back(step);
            island_orders.push_back(by_size);
            std::rotate(by_size.begin() + 1, by_size.begin() + 2, by_size.end());
            island_orders.push_back(by_size);
        }
    }
    uint32_t used = 0;
    for (uint32_t g : cl.island_groups) used += g > 0;

    // Tile counts along DP and PP (CP and EP are never cut into tiles), at
    // most 2 tiles per island, cheapest first by the edges the tile
    // boundaries cut alone; every order of the dimensions for each.
    const double lane = double(cl.count);
    struct Tiles {
        uint64_t kd, kp;
        double est;
    };
    std::vector<Tiles> tiles;
    const uint64_t D = l.size(ParDim::DP), P = l.size(ParDim::PP), most = 2 * std::max<uint32_t>(1, used);
    for (uint64_t kd = 1; kd <= std::min(D, most); ++kd)
        for (uint64_t kp = 1; kp <= std::min(P, most / kd); ++kp) {
            const double ring_cuts = kd > 1 ? double(kd) : 0.0;
            tiles.push_back({kd, kp, ring_cuts * lane / double(D) * w.dp + double(kp - 1) * lane / double(P) * w.pp});
        }
    std::stable_sort(tiles.begin(), tiles.end(), [](const Tiles& a, const Tiles& b) { return a.est < b.est; });

    std::vector<uint32_t> cell_of(static_cast<size_t>(world));  // each rank's cell
    for (uint64_t r = 0; r < world; ++r) {
        const ParCoords c = l.coords_of(r);
        uint64_t id = 0;
        for (size_t j = 0; j < cl.dims.size(); ++j) id += c[static_cast<size_t>(cl.dims[j])] * cl.stride[j];
        cell_of[r] = static_cast<uint32_t>(id);
    }
    std::vector<size_t> perm(cl.dims.size());
    std::vector<uint32_t> cell_island(static_cast<size_t>(cl.count)), best_cells;
    std::vector<uint32_t> isl(static_cast<size_t>(world));
    std::vector<uint64_t> path;
    path.reserve(static_cast<size_t>(cl.count));
    uint64_t spent = 0;
    bool found = false;
    const uint64_t per_candidate = world * (cl.dims.size() + 1);
    for (const Tiles& t : tiles) {
        std::iota(perm.begin(), perm.end(), size_t{0});
        do {
            if (spent + per_candidate > budget) break;
            // the path: tiles in serpentine order, cells in each tile likewise, dims[perm[0]] fastest
            std::vector<uint64_t> k(cl.dims.size(), 1), tile_sizes(cl.dims.size());
            for (size_t j = 0; j < cl.dims.size(); ++j) {
                if (cl.dims[perm[j]] == ParDim::DP) k[j] = t.kd;
                if (cl.dims[perm[j]] == ParDim::PP) k[j] = t.kp;
            }
            path.clear();
            snake_walk(k, [&](const std::vector<uint64_t>& tile) {
                std::vector<uint64_t> lo(cl.dims.size());
                for (size_t j = 0; j < cl.dims.size(); ++j) {
                    const uint64_t n = cl.size[perm[j]];
                    lo[j] = n * tile[j] / k[j];
                    tile_sizes[j] = n * (tile[j] + 1) / k[j] - lo[j];
                }
                snake_walk(tile_sizes, [&](const std::vector<uint64_t>& at) {
                    uint64_t id = 0;
                    for (size_t j = 0; j < cl.dims.size(); ++j) id += (lo[j] + at[j]) * cl.stride[perm[j]];
                    path.push_back(id);
                });
            });
            for (const std::vector<uint32_t>& order : island_orders) {
                spent += per_candidate;
                size_t at = 0;
                for (uint32_t i : order)
                    for (uint32_t q = 0; q < cl.island_groups[i]; ++q) cell_island[path[at++]] = i;
                for (uint64_t r = 0; r < world; ++r) isl[r] = cell_island[cell_of[r]];
                const double c = crossing_bytes(l, isl, w).total();
                if (c < best_cost * (1 - 1e-12)) {
                    best_cost = c;
                    best_cells = cell_island;
                    found = true;
                }
            }
        } while (std::next_permutation(perm.begin(), perm.end()));
        if (spent + per_candidate > budget) break;
    }
    if (!found) return false;

    // Each island's cells, in coordinate order (cp fastest), take its groups'
    // slot sets in slot order; a group's ranks keep their tp coordinates.
    std::vector<std::vector<uint64_t>> island_cells(islands);
    for (uint64_t id = 0; id < cl.count; ++id) island_cells[best_cells[id]].push_back(id);
    std::vector<uint32_t> rank_of_slot(static_cast<size_t>(world));
    for (size_t i = 0; i < islands; ++i)
        for (size_t q = 0; q < island_cells[i].size(); ++q) {
            const uint64_t from = cl.island_sets[i][q];  // base rank (tp = 0) whose slots the cell takes
            ParCoords to = l.coords_of(from);
            for (size_t j = 0; j < cl.dims.size(); ++j)
                to[static_cast<size_t>(cl.dims[j])] = island_cells[i][q] / cl.stride[j] % cl.size[j];
            const uint64_t base = l.rank_of(to);
            for (uint64_t tp = 0; tp < T; ++tp) rank_of_slot[slot_of_rank[from + tp * st]] = static_cast<uint32_t>(base + tp * st);
        }
    p.rank_of_slot_.swap(rank_of_slot);
    p.stages_chained_ = false;
    p.pipelines_first_ = false;
    p.tiled_ = true;
    return true;
}

}  // namespace gputopo
