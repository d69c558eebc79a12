// Swap refinement of a layout placement (see layout_placement.hpp,
// refine_by_swaps): blocks of the framework's groups trade places between
// islands while the bytes crossing islands go down.
#include <algorithm>

#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"

namespace gputopo {

namespace {

struct Lcg {
    uint64_t s = 0x9e3779b97f4a7c15ull;  // fixed: every task draws the same pairs
    uint64_t next(uint64_t n) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return (s >> 33) % n;
    }
};

// The bytes of one rank's edges to ranks in other islands, over the
// dimensions not inside the moved blocks (`inside` by ParDim); counts each
// edge from this end only. `visits` counts the neighbours looked at.
struct EdgeCounter {
    const std::vector<uint32_t>& isl;
    struct Dim {
        ParDim d;
        uint64_t size, stride;
        double bytes;
    };
    std::vector<Dim> dims;  // the dimensions of size > 1 outside the moved blocks
    uint64_t visits = 0;

    EdgeCounter(const ParallelLayout& l, const EdgeBytes& w, const std::vector<uint32_t>& island_of_rank,
                const std::vector<ParDim>& inside)
        : isl(island_of_rank) {
        for (ParDim d : {ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP}) {
            if (l.size(d) <= 1 || std::find(inside.begin(), inside.end(), d) != inside.end()) continue;
            const double b = d == ParDim::CP ? w.cp : d == ParDim::EP ? w.ep_pair : d == ParDim::DP ? w.dp : w.pp;
            dims.push_back({d, l.size(d), l.stride(d), b});
        }
    }
    double rank_cost(uint64_t r) {
        double c = 0;
        const uint32_t me = isl[r];
        for (const Dim& m : dims) {
            const uint64_t K = m.size, st = m.stride, x = (r / st) % K, base = r - x * st;
            uint64_t cross = 0;
            if (m.d == ParDim::EP) {
                for (uint64_t k = 0; k < K; ++k) cross += k != x && isl[base + k * st] != me;
                visits += K;
            } else if (m.d == ParDim::PP) {
                cross += x > 0 && isl[r - st] != me;
                cross += x + 1 < K && isl[r + st] != me;
                visits += 2;
            } else {  // ring; a ring of 2 has 2 edges, as NCCL's
                cross += isl[x + 1 < K ? r + st : base] != me;
                cross += isl[x > 0 ? r - st : base + (K - 1) * st] != me;
                visits += 2;
            }
            c += double(cross) * m.bytes;
        }
        return c;
    }
};

}  // namespace

uint64_t refine_by_swaps(LayoutPlacement& p, const EdgeBytes& w, uint64_t budget) {
    const ParallelLayout& l = p.layout_;
    const uint64_t world = p.world();
    if (world < 2) return 0;
    std::vector<uint32_t> slot_of_rank(static_cast<size_t>(world)), island_of_slot(static_cast<size_t>(world));
    for (uint64_t j = 0; j < p.nodes(); ++j)
        for (uint64_t s = p.node_first_slot_[j]; s < p.node_first_slot_[j + 1]; ++s)
            island_of_slot[s] = p.node_island_[j];
    for (uint64_t s = 0; s < world; ++s) slot_of_rank[p.rank_of_slot_[s]] = static_cast<uint32_t>(s);
    std::vector<uint32_t> isl(static_cast<size_t>(world));
    for (uint64_t r = 0; r < world; ++r) isl[r] = island_of_slot[slot_of_rank[r]];

    uint64_t swaps = 0;
    // Levels: TP groups, then TP x CP blocks, then TP x CP x EP blocks, each
    // with an equal share of the budget.
    std::vector<std::vector<ParDim>> levels;
    std::vector<ParDim> in{ParDim::TP};
    levels.push_back(in);
    for (ParDim d : {ParDim::CP, ParDim::EP})
        if (l.size(d) > 1) {
            in.push_back(d);
            levels.push_back(in);
        }
    for (const auto& dims : levels) {
        EdgeCounter ec(l, w, isl, dims);
        // Member offsets of a block from its base rank (all coordinates of
        // `dims` zero), and the bases.
        std::vector<uint64_t> off{0};
        for (ParDim d : dims) {
            std::vector<uint64_t> next;
            for (uint64_t k = 0; k < l.size(d); ++k)
                for (uint64_t o : off) next.push_back(o + k * l.stride(d));
            off.swap(next);
        }
        // Bases in coordinate order (tp fastest, then cp, ep, dp, pp), not
        // rank order, so that the draws, and the physical result, do not
        // depend on the order the framework states.
        std::vector<uint64_t> bases;
        ParCoords c{};
        for (uint64_t pos = 0; pos < world; ++pos) {
            bool base = true;
            for (ParDim d : dims) base = base && c[static_cast<size_t>(d)] == 0;
            if (base) bases.push_back(l.rank_of(c));
            for (ParDim d : {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP}) {
                auto& x = c[static_cast<size_t>(d)];
                if (++x < l.size(d)) break;
                x = 0;
            }
        }
        if (bases.size() < 2) continue;
        Lcg rng;
        const uint64_t level_budget = budget / levels.size();
        // A draw costs its block's size even when it is not tried, so that
        // draws within one island also end.
        for (uint64_t spent = 0; ec.visits + spent < level_budget; spent += off.size()) {
            const uint64_t a = bases[rng.next(bases.size())], b = bases[rng.next(bases.size())];
            bool differ = false;
            for (uint64_t o : off) differ = differ || isl[a + o] != isl[b + o];
            if (!differ) continue;
            double before = 0, after = 0;
            for (uint64_t o : off) before += ec.rank_cost(a + o) + ec.rank_cost(b + o);
            for (uint64_t o : off) std::swap(isl[a + o], isl[b + o]);
            for (uint64_t o : off) after += ec.rank_cost(a + o) + ec.rank_cost(b + o);
            if (after < before * (1 - 1e-9) - 1e-3) {
                for (uint64_t o : off) std::swap(slot_of_rank[a + o], slot_of_rank[b + o]);
                ++swaps;
            } else {
                for (uint64_t o : off) std::swap(isl[a + o], isl[b + o]);
            }
        }
    }
    for (uint64_t r = 0; r < world; ++r) p.rank_of_slot_[slot_of_rank[r]] = static_cast<uint32_t>(r);
    p.refine_swaps_ += swaps;
    return swaps;
}

}  // namespace gputopo
