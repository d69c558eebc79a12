#include "topo/plan/gpu_grouping.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "topo/core/distance.hpp"
#include "topo/plan/islands.hpp"

namespace gputopo {

namespace {

constexpr int kInf = std::numeric_limits<int>::max() / 4;

// Pairwise ranks between the allocation's GPUs (positions in `gpus`).
struct Ranks {
    int n = 0;
    std::vector<int> link;  // gpu_gpu_path rank
    std::vector<int> pci;   // PCIe-only rank (tie-breaker)
    int r(int i, int j) const { return link[static_cast<size_t>(i * n + j)]; }
    int p(int i, int j) const { return pci[static_cast<size_t>(i * n + j)]; }
};

Ranks compute_ranks(const Node& node, const std::vector<int>& gpus) {
    Ranks k;
    k.n = static_cast<int>(gpus.size());
    k.link.assign(static_cast<size_t>(k.n * k.n), 0);
    k.pci.assign(static_cast<size_t>(k.n * k.n), 0);
    for (int i = 0; i < k.n; ++i) {
        for (int j = i + 1; j < k.n; ++j) {
            int a = gpus[static_cast<size_t>(i)], b = gpus[static_cast<size_t>(j)];
            int lr = gpu_gpu_path(node, a, b).rank();
            const Gpu& ga = node.gpus[static_cast<size_t>(a)];
            const Gpu& gb = node.gpus[static_cast<size_t>(b)];
            int pr = pci_path(node, ga.pci_object, gb.pci_object, ga.numa, gb.numa).rank();
            k.link[static_cast<size_t>(i * k.n + j)] = k.link[static_cast<size_t>(j * k.n + i)] = lr;
            k.pci[static_cast<size_t>(i * k.n + j)] = k.pci[static_cast<size_t>(j * k.n + i)] = pr;
        }
    }
    return k;
}

GroupScore score_positions(const Ranks& k, const std::vector<int>& members) {
    GroupScore s;
    for (size_t x = 0; x < members.size(); ++x)
        for (size_t y = x + 1; y < members.size(); ++y) {
            int r = k.r(members[x], members[y]);
            s.worst = std::max(s.worst, r);
            s.sum += r;
            s.pci += k.p(members[x], members[y]);
        }
    return s;
}

// ---------------------------------------------------------------- exact --

// Phase-2 cost of a pair: link rank first, PCIe-only rank as tie-breaker,
// folded into one number (a sum of at most 120 PCIe ranks <= 6000 fits below kScale).
constexpr long long kScale = 1LL << 24;
constexpr long long kInf64 = std::numeric_limits<long long>::max() / 4;

struct Entry {
    int worst = -1;          // phase 1: minimal worst of the rest; -1 unknown
    long long cost = -1;     // phase 2: the rest's minimal cost when exact, else a lower bound (-1: none)
    bool exact = false;
    uint32_t choice = 0;     // phase 2: the group chosen here (bit mask of positions)
    int8_t kind = -1;
};

class ExactGrouping {
public:
    ExactGrouping(const Ranks& k, const std::vector<GroupKind>& kinds) : k_(k), kinds_(kinds) {
        n_ = k.n;
        full_ = n_ == 32 ? 0xffffffffu : ((1u << n_) - 1u);
        dims_ = kinds_.size() > 1 ? kinds_[0].count + 1 : 1;
        size_t states = (size_t{1} << n_) * static_cast<size_t>(dims_);
        if (states <= (size_t{1} << 18)) flat_.assign(states, Entry{});
        // For the lower bound of the rest's cost: every GPU's partners, cheapest first.
        order_.assign(static_cast<size_t>(n_), {});
        for (int i = 0; i < n_; ++i) {
            auto& o = order_[static_cast<size_t>(i)];
            for (int j = 0; j < n_; ++j)
                if (j != i) o.push_back(j);
            std::stable_sort(o.begin(), o.end(), [&](int x, int y) { return pair_cost(i, x) < pair_cost(i, y); });
        }
        // ... and a cheaper, weaker one: cheapest pairs among all GPUs.
        all_mask_a_.assign(kinds_.size(), std::vector<long long>(static_cast<size_t>(n_), 0));
        for (size_t kind = 0; kind < kinds_.size(); ++kind)
            for (int i = 0; i < n_; ++i)
                all_mask_a_[kind][static_cast<size_t>(i)] = cheapest(i, full_, kind);
    }

    // incumbent: any valid partition (costed groups, positions) to bound the
    // search; empty when none.
    std::vector<std::vector<int>> solve(const std::vector<std::vector<int>>& incumbent) {
        limit_ = solve_worst(0, 0);
        if (limit_ >= kInf) return {};
        long long budget = kInf64;
        long long inc_cost = 0;
        bool inc_ok = !incumbent.empty();
        for (const auto& g : incumbent) {
            GroupScore sc = score_positions(k_, g);
            if (sc.worst > limit_) inc_ok = false;
            inc_cost += sc.sum * kScale + sc.pci;
        }
        if (inc_ok) budget = inc_cost + 1;  // the optimum is at most the incumbent
        solve_cost(0, 0, budget);
        std::vector<std::vector<int>> groups;
        uint32_t mask = 0;
        int used1 = 0;
        while (mask != full_) {
            const Entry& e = entry(mask, used1);
            if (e.kind < 0 || e.choice == 0) break;  // sizes that do not add up: nothing more to place
            if (kinds_[static_cast<size_t>(e.kind)].costed) {
                std::vector<int> g;
                for (int i = 0; i < n_; ++i)
                    if (e.choice & (1u << i)) g.push_back(i);
                groups.push_back(g);
            }
            if (e.kind == 0 && dims_ > 1) ++used1;
            mask |= e.choice;
        }
        return groups;
    }

private:
    long long pair_cost(int i, int j) const { return k_.r(i, j) * kScale + k_.p(i, j); }

    // Sum of the (size-1) cheapest pairs of position i among `among` (0 for a free kind).
    long long cheapest(int i, uint32_t among, size_t kind) const {
        long long sum = 0;
        int need = kinds_[kind].costed ? kinds_[kind].size - 1 : 0;
        for (int j : order_[static_cast<size_t>(i)]) {
            if (need == 0) break;
            if (!(among & (1u << j))) continue;
            sum += pair_cost(i, j);
            --need;
        }
        return sum;
    }

    // A lower bound of the cost of placing rest_mask (used1: kind-0 groups
    // placed): a GPU in a costed group of size s pays at least half the sum of
    // its s-1 cheapest pairs (among the rest when `tight`, else among all);
    // 0 in a free group. The two group kinds are filled in the cheapest way
    // (a two-type assignment).
    long long lower_bound(uint32_t rest_mask, int used1, bool tight) const {
        long long a[2][32];
        int nr = 0;
        for (int i = 0; i < n_; ++i) {
            if (!(rest_mask & (1u << i))) continue;
            for (size_t kind = 0; kind < kinds_.size(); ++kind)
                a[kind][nr] = tight ? cheapest(i, rest_mask, kind) : all_mask_a_[kind][static_cast<size_t>(i)];
            ++nr;
        }
        long long base = 0;
        if (kinds_.size() == 1) {
            for (int x = 0; x < nr; ++x) base += a[0][x];
            return base / 2;
        }
        int rem0 = remaining(0, full_ & ~rest_mask, used1);
        long long diffs[32];
        for (int x = 0; x < nr; ++x) {
            base += a[1][x];
            diffs[x] = a[0][x] - a[1][x];
        }
        int take = std::min(nr, rem0 * kinds_[0].size);
        std::nth_element(diffs, diffs + take, diffs + nr);
        for (int x = 0; x < take; ++x) base += diffs[x];
        return base / 2;
    }

    int groups_left(uint32_t placed, int used1) const {
        int g = 0;
        for (size_t kind = 0; kind < kinds_.size(); ++kind) g += remaining(kind, placed, used1);
        return g;
    }

    Entry& entry(uint32_t mask, int used1) {
        size_t key = static_cast<size_t>(mask) * static_cast<size_t>(dims_) + static_cast<size_t>(dims_ > 1 ? used1 : 0);
        if (!flat_.empty()) return flat_[key];
        return map_[key];
    }

    int remaining(size_t kind, uint32_t mask, int used1) const {
        if (dims_ == 1) return kinds_[0].count - __builtin_popcount(mask) / kinds_[0].size;
        int used_members1 = used1 * kinds_[0].size;
        int used2 = (__builtin_popcount(mask) - used_members1) / kinds_[1].size;
        return kind == 0 ? kinds_[0].count - used1 : kinds_[1].count - used2;
    }

    // Calls leaf(group_mask, score) for every group of `size` positions made
    // of `first` and free positions above it, in lexicographic order. `prune`
    // gets the running score: true stops that branch.
    template <class Prune, class Leaf>
    void enumerate(uint32_t mask, int first, int size, bool costed, Prune prune, Leaf leaf) const {
        int members[32];
        int free_pos[32];
        int nfree = 0;
        for (int j = first + 1; j < n_; ++j)
            if (!(mask & (1u << j))) free_pos[nfree++] = j;
        if (nfree < size - 1) return;
        members[0] = first;
        GroupScore s;
        rec(free_pos, nfree, 0, 1, size, costed, members, s, prune, leaf);
    }

    template <class Prune, class Leaf>
    void rec(const int* free_pos, int nfree, int from, int have, int size, bool costed, int* members, GroupScore s,
             Prune& prune, Leaf& leaf) const {
        if (have == size) {
            uint32_t g = 0;
            for (int x = 0; x < size; ++x) g |= 1u << members[x];
            leaf(g, s);
            return;
        }
        for (int f = from; f <= nfree - (size - have); ++f) {
            int j = free_pos[f];
            GroupScore t = s;
            if (costed)
                for (int x = 0; x < have; ++x) {
                    int r = k_.r(members[x], j);
                    t.worst = std::max(t.worst, r);
                    t.sum += r;
                    t.pci += k_.p(members[x], j);
                }
            if (prune(t)) continue;
            members[have] = j;
            rec(free_pos, nfree, f + 1, have + 1, size, costed, members, t, prune, leaf);
        }
    }

    int solve_worst(uint32_t mask, int used1) {
        if (mask == full_) return 0;
        {
            Entry& e = entry(mask, used1);
            if (e.worst >= 0) return e.worst;
        }
        int first = __builtin_ctz(~mask & full_);
        int best = kInf;
        for (size_t kind = 0; kind < kinds_.size(); ++kind) {
            if (remaining(kind, mask, used1) <= 0) continue;
            const GroupKind& gk = kinds_[kind];
            enumerate(
                mask, first, gk.size, gk.costed, [&](const GroupScore& t) { return t.worst >= best; },
                [&](uint32_t g, const GroupScore& s) {
                    int rest = solve_worst(mask | g, used1 + (kind == 0 && dims_ > 1 ? 1 : 0));
                    if (rest >= kInf) return;
                    best = std::min(best, std::max(s.worst, rest));
                });
        }
        entry(mask, used1).worst = best;
        return best;
    }

    // Minimal cost (sum, then PCIe tie-break) of the rest, using only groups
    // whose worst <= limit_. A candidate group whose cost plus a lower bound of
    // the rest cannot beat the best found so far is not followed: the value
    // stays exact, and the first best in lexicographic order is kept.
    long long solve_cost(uint32_t mask, int used1, long long budget) {
        if (mask == full_) return 0;
        {
            Entry& e = entry(mask, used1);
            if (e.exact) return e.cost;
            if (e.cost >= budget) return e.cost;  // known: nothing below budget here
        }
        int first = __builtin_ctz(~mask & full_);
        long long best = budget;
        bool found = false;
        uint32_t choice = 0;
        int8_t best_kind = -1;
        for (size_t kind = 0; kind < kinds_.size(); ++kind) {
            if (remaining(kind, mask, used1) <= 0) continue;
            const GroupKind& gk = kinds_[kind];
            const int next_used1 = used1 + (kind == 0 && dims_ > 1 ? 1 : 0);
            enumerate(
                mask, first, gk.size, gk.costed,
                [&](const GroupScore& t) { return t.worst > limit_ || t.sum * kScale + t.pci >= best; },
                [&](uint32_t g, const GroupScore& s) {
                    long long own = s.sum * kScale + s.pci;
                    uint32_t rest_mask = full_ & ~(mask | g);
                    if (own + lower_bound(rest_mask, next_used1, false) >= best) return;
                    if (groups_left(mask | g, next_used1) > 1 && own + lower_bound(rest_mask, next_used1, true) >= best)
                        return;
                    long long rest = solve_cost(mask | g, next_used1, best - own);
                    if (own + rest < best) {
                        best = own + rest;
                        found = true;
                        choice = g;
                        best_kind = static_cast<int8_t>(kind);
                    }
                });
        }
        Entry& e = entry(mask, used1);
        if (found) {
            e.exact = true;
            e.cost = best;
            e.choice = choice;
            e.kind = best_kind;
            return best;
        }
        e.cost = std::max(e.cost, budget);  // the rest costs at least `budget`
        return budget;
    }

    const Ranks& k_;
    std::vector<GroupKind> kinds_;
    int n_ = 0;
    uint32_t full_ = 0;
    int dims_ = 1;
    int limit_ = 0;
    std::vector<std::vector<int>> order_;  // per position: the others, cheapest pair first
    std::vector<std::vector<long long>> all_mask_a_;  // per kind, per position: cheapest(i, all)
    std::vector<Entry> flat_;
    std::unordered_map<size_t, Entry> map_;
};

// ------------------------------------------------------------ heuristic --

struct Partition {
    std::vector<std::vector<int>> groups;  // positions
    std::vector<bool> costed;
};

struct GlobalScore {
    int worst = 0;
    int at_worst = 0;
    long long sum = 0;
    long long pci = 0;
    bool operator<(const GlobalScore& o) const {
        if (worst != o.worst) return worst < o.worst;
        if (at_worst != o.at_worst) return at_worst < o.at_worst;
        if (sum != o.sum) return sum < o.sum;
        return pci < o.pci;
    }
};

GlobalScore global_score(const std::vector<GroupScore>& scores, const std::vector<bool>& costed) {
    GlobalScore g;
    for (size_t i = 0; i < scores.size(); ++i) {
        if (!costed[i]) continue;
        const GroupScore& s = scores[i];
        if (s.worst > g.worst) {
            g.worst = s.worst;
            g.at_worst = 1;
        } else if (s.worst == g.worst) {
            ++g.at_worst;
        }
        g.sum += s.sum;
        g.pci += s.pci;
    }
    return g;
}

// Group sizes in the order the seeds fill them: costed kinds first.
std::vector<std::pair<int, bool>> slots(const std::vector<GroupKind>& kinds) {
    std::vector<std::pair<int, bool>> out;
    for (bool costed_pass : {true, false})
        for (const auto& k : kinds)
            if (k.costed == costed_pass)
                for (int c = 0; c < k.count; ++c) out.emplace_back(k.size, k.costed);
    return out;
}

Partition seed_blocks(const Node& node, const std::vector<int>& gpus, const std::vector<GroupKind>& kinds) {
    std::vector<int> island = gpu_islands(node);
    std::vector<int> order(gpus.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
        const Gpu& a = node.gpus[static_cast<size_t>(gpus[static_cast<size_t>(x)])];
        const Gpu& b = node.gpus[static_cast<size_t>(gpus[static_cast<size_t>(y)])];
        int ia = island[static_cast<size_t>(a.index)], ib = island[static_cast<size_t>(b.index)];
        if (ia != ib) return ia < ib;
        if (a.numa != b.numa) return a.numa < b.numa;
        return a.index < b.index;
    });
    Partition p;
    size_t at = 0;
    for (auto [size, costed] : slots(kinds)) {
        std::vector<int> g(order.begin() + static_cast<long>(at), order.begin() + static_cast<long>(at + static_cast<size_t>(size)));
        at += static_cast<size_t>(size);
        p.groups.push_back(g);
        p.costed.push_back(costed);
    }
    return p;
}

Partition seed_greedy(const Ranks& k, const std::vector<GroupKind>& kinds) {
    std::vector<bool> used(static_cast<size_t>(k.n), false);
    Partition p;
    for (auto [size, costed] : slots(kinds)) {
        std::vector<int> g;
        if (!costed) {
            for (int i = 0; i < k.n && static_cast<int>(g.size()) < size; ++i)
                if (!used[static_cast<size_t>(i)]) g.push_back(i);
        } else {
            for (int i = 0; i < k.n; ++i)
                if (!used[static_cast<size_t>(i)]) {
                    g.push_back(i);
                    break;
                }
            while (static_cast<int>(g.size()) < size) {
                int best = -1;
                std::pair<int, long long> best_cost{kInf, 0};
                for (int j = 0; j < k.n; ++j) {
                    if (used[static_cast<size_t>(j)] || std::find(g.begin(), g.end(), j) != g.end()) continue;
                    int w = 0;
                    long long s = 0;
                    for (int m : g) {
                        w = std::max(w, k.r(m, j));
                        s += k.r(m, j) * 1000LL + k.p(m, j);
                    }
                    if (std::make_pair(w, s) < best_cost) {
                        best_cost = {w, s};
                        best = j;
                    }
                }
                g.push_back(best);
            }
        }
        for (int m : g) used[static_cast<size_t>(m)] = true;
        p.groups.push_back(g);
        p.costed.push_back(costed);
    }
    return p;
}

GlobalScore improve_by_swaps(const Ranks& k, Partition& p) {
    std::vector<GroupScore> scores;
    for (const auto& g : p.groups) scores.push_back(score_positions(k, g));
    for (size_t i = 0; i < p.groups.size(); ++i)
        if (!p.costed[i]) scores[i] = GroupScore{};
    GlobalScore cur = global_score(scores, p.costed);
    for (int pass = 0; pass < 64; ++pass) {
        bool improved = false;
        for (size_t a = 0; a < p.groups.size(); ++a)
            for (size_t b = a + 1; b < p.groups.size(); ++b) {
                if (!p.costed[a] && !p.costed[b]) continue;
                for (size_t x = 0; x < p.groups[a].size(); ++x)
                    for (size_t y = 0; y < p.groups[b].size(); ++y) {
                        std::swap(p.groups[a][x], p.groups[b][y]);
                        GroupScore sa = p.costed[a] ? score_positions(k, p.groups[a]) : GroupScore{};
                        GroupScore sb = p.costed[b] ? score_positions(k, p.groups[b]) : GroupScore{};
                        GroupScore oa = scores[a], ob = scores[b];
                        scores[a] = sa;
                        scores[b] = sb;
                        GlobalScore next = global_score(scores, p.costed);
                        if (next < cur) {
                            cur = next;
                            improved = true;
                        } else {
                            scores[a] = oa;
                            scores[b] = ob;
                            std::swap(p.groups[a][x], p.groups[b][y]);
                        }
                    }
            }
        if (!improved) break;
    }
    return cur;
}

std::vector<std::vector<int>> heuristic(const Node& node, const std::vector<int>& gpus, const Ranks& k,
                                        const std::vector<GroupKind>& kinds) {
    Partition a = seed_blocks(node, gpus, kinds);
    Partition b = seed_greedy(k, kinds);
    GlobalScore sa = improve_by_swaps(k, a);
    GlobalScore sb = improve_by_swaps(k, b);
    const Partition& best = (sb < sa) ? b : a;
    std::vector<std::vector<int>> out;
    for (size_t i = 0; i < best.groups.size(); ++i)
        if (best.costed[i]) out.push_back(best.groups[i]);
    return out;
}

}  // namespace

std::vector<std::vector<int>> group_gpus(const Node& node, const std::vector<int>& gpus_in,
                                         const std::vector<GroupKind>& kinds_in) {
    std::vector<int> gpus = gpus_in;
    std::sort(gpus.begin(), gpus.end());
    std::vector<GroupKind> kinds;
    for (const auto& k : kinds_in)
        if (k.count > 0 && k.size > 0) kinds.push_back(k);

    std::vector<std::vector<int>> positions;
    bool trivial = kinds.size() == 1 && kinds[0].costed && (kinds[0].size == 1 || kinds[0].count == 1);
    if (gpus.empty() || kinds.empty()) {
        return {};
    } else if (trivial) {
        if (kinds[0].size == 1)
            for (size_t i = 0; i < gpus.size(); ++i) positions.push_back({static_cast<int>(i)});
        else {
            positions.emplace_back(gpus.size());
            std::iota(positions.back().begin(), positions.back().end(), 0);
        }
    } else {
        Ranks k = compute_ranks(node, gpus);
        positions = heuristic(node, gpus, k, kinds);
        if (static_cast<int>(gpus.size()) <= kExactLimit) positions = ExactGrouping(k, kinds).solve(positions);
    }

    std::vector<std::vector<int>> out;
    for (const auto& g : positions) {
        std::vector<int> ids;
        for (int pos : g) ids.push_back(gpus[static_cast<size_t>(pos)]);
        std::sort(ids.begin(), ids.end());
        out.push_back(ids);
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace gputopo
