#include "topo/fabric/layout_traffic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "topo/core/errors.hpp"
#include "topo/core/suggest.hpp"

namespace gputopo {

namespace {

[[noreturn]] void bad_model(const std::string& text, const std::string& why) {
    throw ParseError("bad model description '" + text + "': " + why +
                     " (expected e.g. 'params=70B,layers=80,hidden=8192,seq=4096,micro-batch=1,micro-batches=16', "
                     "optional top-k=2)");
}

double number(const std::string& text, const std::string& key, const std::string& value, double max) {
    if (value.empty() || value.size() > 24) bad_model(text, key + "='" + value + "' is not a number");
    std::string v = value;
    double scale = 1;
    switch (v.back()) {
        case 'K': case 'k': scale = 1e3; v.pop_back(); break;
        case 'M': scale = 1e6; v.pop_back(); break;
        case 'B': case 'G': scale = 1e9; v.pop_back(); break;
        case 'T': scale = 1e12; v.pop_back(); break;
        default: break;
    }
    for (char c : v)
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+'))
            bad_model(text, key + "='" + value + "' is not a number");
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) bad_model(text, key + "='" + value + "' is not a number");
    x *= scale;
    if (x < 1 || x > max) bad_model(text, key + "=" + value + " is not from 1 to " + std::to_string(static_cast<unsigned long long>(max)));
    return x;
}

// Calls f(dim, island_a, island_b, bytes) for every edge of every group
// (ring neighbours, pipeline neighbours) whose ends are in different islands;
// EP groups through f_pairs(group islands sorted).
template <class F>
void crossing_edges(const ParallelLayout& l, const std::vector<uint32_t>& isl, const EdgeBytes& e, F&& f) {
    const uint64_t world = l.world();
    std::vector<uint32_t> members;
    for (ParDim d : {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP}) {
        const uint64_t size = l.size(d);
        if (size <= 1) continue;
        const uint64_t stride = l.stride(d);
        const double bytes = d == ParDim::TP ? e.tp : d == ParDim::CP ? e.cp : d == ParDim::EP ? e.ep_pair
                             : d == ParDim::DP ? e.dp : e.pp;
        for (uint64_t base = 0; base < world; ++base) {
            if ((base / stride) % size != 0) continue;
            members.clear();
            for (uint64_t k = 0; k < size; ++k) members.push_back(isl[base + k * stride]);
            if (d == ParDim::EP) {
                // all-to-all: every pair in different islands; per island, its
                // members times the members elsewhere.
                std::sort(members.begin(), members.end());
                for (size_t a = 0; a < members.size();) {
                    size_t b = a;
                    while (b < members.size() && members[b] == members[a]) ++b;
                    // pairs (one of these, one elsewhere), each counted from both ends
                    f(d, members[a], ~uint32_t{0}, bytes * double(b - a) * double(members.size() - (b - a)) / 2);
                    a = b;
                }
                continue;
            }
            const size_t edges = d == ParDim::PP ? size - 1 : size;  // a ring of 2 has 2 edges, as NCCL's
            for (size_t k = 0; k < edges; ++k) {
                uint32_t a = members[k], b = members[(k + 1) % size];
                if (a != b) f(d, a, b, bytes);
            }
        }
    }
}

void add(CrossBytes& c, ParDim d, double bytes) {
    switch (d) {
        case ParDim::TP: c.tp += bytes; break;
        case ParDim::CP: c.cp += bytes; break;
        case ParDim::EP: c.ep += bytes; break;
        case ParDim::DP: c.dp += bytes; break;
        case ParDim::PP: c.pp += bytes; break;
    }
}

}  // namespace

ModelShape parse_model_shape(const std::string& text) {
    ModelShape m;
    if (text.empty()) bad_model(text, "empty");
    if (text.size() > 256) bad_model(text.substr(0, 64), "longer than 256 characters");
    // Every key but top-k is needed: a default for the others would give bytes
    // that look real and are not (hidden=1, seq=1).
    const char* const required[] = {"params", "layers", "hidden", "seq", "micro-batch", "micro-batches"};
    std::vector<std::string> seen;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t comma = text.find(',', pos);
        std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        size_t eq = item.find('=');
        if (eq == std::string::npos) bad_model(text, "'" + item + "' is not KEY=VALUE");
        std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) bad_model(text, key + " given twice");
        if (key == "params") {
            m.params = number(text, key, value, 1e15);
        } else if (key == "layers") {
            m.layers = static_cast<uint64_t>(number(text, key, value, 1e5));
        } else if (key == "hidden") {
            m.hidden = static_cast<uint64_t>(number(text, key, value, 1e7));
        } else if (key == "seq") {
            m.seq = static_cast<uint64_t>(number(text, key, value, 1e8));
        } else if (key == "micro-batch") {
            m.micro_batch = static_cast<uint64_t>(number(text, key, value, 1e5));
        } else if (key == "micro-batches") {
            m.microbatches = static_cast<uint64_t>(number(text, key, value, 1e6));
        } else if (key == "top-k") {
            m.top_k = static_cast<uint64_t>(number(text, key, value, 1024));
        } else {
            const std::vector<std::string> known = {"params", "layers", "hidden", "seq", "micro-batch", "micro-batches", "top-k"};
            const std::string near = nearest_word(key, known);
            bad_model(text, "unknown key '" + key + "' (" + (near.empty() ? "" : "did you mean " + near + "? ") +
                                "known: params, layers, hidden, seq, micro-batch, micro-batches, top-k)");
        }
        seen.push_back(key);
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    std::string missing;
    for (const char* k : required)
        if (std::find(seen.begin(), seen.end(), k) == seen.end()) missing += (missing.empty() ? "" : ", ") + std::string(k);
    if (!missing.empty())
        bad_model(text, "missing " + missing + " (every key but top-k is needed)");
    return m;
}

EdgeBytes edge_bytes(const ModelShape& m, const ParallelLayout& l) {
    const double T = double(l.size(ParDim::TP)), C = double(l.size(ParDim::CP)), E = double(l.size(ParDim::EP)),
                 D = double(l.size(ParDim::DP)), P = double(l.size(ParDim::PP));
    EdgeBytes e;
    e.act = double(m.micro_batch) * double(m.seq) * double(m.hidden) * 2;
    const double lps = double(m.layers) / P, M = double(m.microbatches);
    if (T > 1) e.tp = 4.0 * lps * M * 2.0 * (T - 1) / T * e.act;
    if (C > 1) e.cp = 3.0 * lps * M * (C - 1) * 2.0 * e.act / (C * T);
    if (E > 1) e.ep_pair = 4.0 * lps * M * double(m.top_k) * e.act / (C * T) / E;
    if (P > 1) e.pp = 2.0 * M * e.act / (C * T);
    if (D > 1) e.dp = 2.0 * (D - 1) / D * (m.params / (T * P * E) * 2);
    return e;
}

CrossBytes crossing_bytes(const ParallelLayout& l, const std::vector<uint32_t>& island_of_rank, const EdgeBytes& e) {
    CrossBytes c;
    crossing_edges(l, island_of_rank, e, [&](ParDim d, uint32_t, uint32_t, double bytes) {
        // EP pairs arrive once per island side: halves summing to the pair count
        add(c, d, bytes);
    });
    return c;
}

std::vector<double> island_egress(const ParallelLayout& l, const std::vector<uint32_t>& island_of_rank,
                                  const EdgeBytes& e, size_t islands) {
    std::vector<double> out(islands, 0);
    crossing_edges(l, island_of_rank, e, [&](ParDim d, uint32_t a, uint32_t b, double bytes) {
        if (d == ParDim::EP) {
            out[a] += 2 * bytes;  // this island's side of its pairs
            return;
        }
        out[a] += bytes;
        out[b] += bytes;
    });
    return out;
}

double BoundBytes::total() const { return parts.tp + std::max({separate, joint, projection, split, cut, stages, ends}); }

namespace {

// Lanes of a ragged island. The bound speaks for placements with the fewest
// straddling TP groups: island i holds floor(g_i / T) whole TP groups, and its
// g_i mod T other GPUs belong to the S = world / T - sum floor(g_i / T)
// groups that straddle. A straddling group has one cell in each TP lane (the
// ranks with one tp coordinate), so in lane t island i holds lo = floor(g_i /
// T) cells plus e_t in [0, min(g_i mod T, S)] of straddling groups, and over
// the T lanes the e_t add up to g_i mod T (each such GPU is one lane's cell).
// A term that bounds each lane by a sum over islands of cost_i(cells) is
// bounded over the lanes by the sum over islands of over_lanes(cost_i).
struct Lanes {
    uint64_t lo = 0, extra = 0, cap = 0;  // cells in every lane; extra cells over the lanes; at most per lane
};

uint64_t straddling_groups(const std::vector<uint64_t>& g, uint64_t T) {
    uint64_t whole = 0, world = 0;
    for (uint64_t x : g) {
        whole += x / T;
        world += x;
    }
    return world / T > whole ? world / T - whole : 0;
}

Lanes lanes_of(uint64_t x, uint64_t T, uint64_t S) { return {x / T, x % T, std::min(x % T, S)}; }

// The least sum over the T lanes of cost(lo + e_t), e_t in [0, cap] adding
// up to extra; `count`, when given, gets how many lanes take each e.
// O(T extra cap).
template <class F>
double over_lanes(uint64_t T, const Lanes& r, F&& cost, std::vector<uint64_t>* count = nullptr) {
    const uint64_t cap = std::min(r.cap, r.extra);
    std::vector<double> c(static_cast<size_t>(cap + 1));
    for (uint64_t k = 0; k <= cap; ++k) c[k] = cost(r.lo + k);
    if (count) count->assign(static_cast<size_t>(cap + 1), 0);
    if (r.extra == 0) {
        if (count) (*count)[0] = T;
        return double(T) * c[0];
    }
    const double inf = 1e300;
    // best[t][j]: the least over lanes 0..t-1 with j extra cells among them
    std::vector<std::vector<double>> best(static_cast<size_t>(T + 1), std::vector<double>(static_cast<size_t>(r.extra + 1), inf));
    best[0][0] = 0;
    for (uint64_t t = 0; t < T; ++t)
        for (uint64_t j = 0; j <= r.extra; ++j) {
            if (best[t][j] >= inf) continue;
            for (uint64_t k = 0; k <= cap && j + k <= r.extra; ++k)
                best[t + 1][j + k] = std::min(best[t + 1][j + k], best[t][j] + c[k]);
        }
    if (count)
        for (uint64_t t = T, j = r.extra; t > 0; --t)
            for (uint64_t k = 0; k <= cap && k <= j; ++k)
                if (best[t - 1][j - k] < inf && best[t - 1][j - k] + c[k] <= best[t][j] * (1 + 1e-12) + 1e-300) {
                    ++(*count)[k];
                    j -= k;
                    break;
                }
    return best[T][r.extra];
}

// The packing bound of one dimension, per TP lane, where every island holds
// whole TP groups (n_i cells of each lane, exactly). The lane's cells fall
// into groups of K (DP rings, pipelines, CP rings, EP groups), R of them. Take
// any placement and the graph joining each island to the groups it holds
// part of. A group with one island is whole there and costs nothing; take the
// whole groups away, and each island is left with a multiple of K plus its
// remainder rho_i = n_i mod K. In each connected part of what remains, with j
// islands and m groups, the islands' cells fill the m groups exactly, so the
// islands' remainders sum to a multiple of K (and an island whose remainder
// is 0 only adds to j and m, as does any group beyond sum rho / K); the part
// has at least j + m - 1 pieces (island, group) (it is connected) and every
// group in it at least 2. A ring of k pieces crosses at least k edges
// (k >= 2), a path at least k - 1, an EP group at least (k - 1) K / 2 pairs
// (pieces of sizes s summing to K: sum_{a<b} s_a s_b, least with one piece of
// K - k + 1 and the rest single cells, (k - 1)(K - k / 2) >= (k - 1) K / 2).
// So a part costs at least
//   ring: max(j + m - 1, 2 m) edges; path: max(j - 1, m); EP: max(j - 1, m) K / 2,
// and the lane at least the least sum over partitions of the islands with
// rho_i > 0 into parts whose remainders sum to a multiple of K, m = that sum
// / K: exact over every partition for up to kPackExact such islands (O(3^n)),
// else with parts counted at most min(n / 2, M) (each part has two islands or
// more, and a group or more), M = sum rho / K.
enum class GroupKind { Ring, Path, Clique };
constexpr size_t kPackExact = 12;

double part_cost(GroupKind kind, double j, double m, uint64_t K) {
    switch (kind) {
        case GroupKind::Ring: return std::max(j + m - 1, 2 * m);
        case GroupKind::Path: return std::max(j - 1, m);
        case GroupKind::Clique: return std::max(j - 1, m) * double(K) / 2;
    }
    return 0;
}

double packing_pieces(const std::vector<uint64_t>& cells, uint64_t K, GroupKind kind) {
    if (K <= 1) return 0;
    std::vector<uint64_t> rho;
    for (uint64_t n : cells)
        if (n % K) rho.push_back(n % K);
    const size_t n = rho.size();
    if (n == 0) return 0;
    uint64_t total = 0;
    for (uint64_t r : rho) total += r;
    if (n > kPackExact) {
        const double M = double(total / K), parts = std::min(double(n / 2), M);
        // parts each cost >= their own max(..): summed, >= the max of the sums
        return std::max(0.0, kind == GroupKind::Ring ? std::max(double(n) + M - parts, 2 * M)
                                                     : part_cost(kind, double(n) - parts + 1, M, K));
    }
    const size_t full = (size_t(1) << n) - 1;
    std::vector<uint64_t> sum(full + 1, 0);
    for (size_t s = 1; s <= full; ++s) {
        size_t low = 0;
        while (!(s >> low & 1)) ++low;
        sum[s] = sum[s & (s - 1)] + rho[low];
    }
    const double inf = 1e300;
    std::vector<double> best(full + 1, inf);
    best[0] = 0;
    for (size_t s = 1; s <= full; ++s) {
        if (sum[s] % K) continue;  // only unions of parts are reached
        const size_t low = s & (~s + 1);
        for (size_t sub = s; sub; sub = (sub - 1) & s) {  // the part holding the lowest island
            if (!(sub & low) || sum[sub] % K || best[s ^ sub] >= inf) continue;
            const double c = part_cost(kind, double(__builtin_popcountll(sub)), double(sum[sub] / K), K) + best[s ^ sub];
            best[s] = std::min(best[s], c);
        }
    }
    return best[full] < inf ? best[full] : 0;
}

// parts.{cp, ep, dp, pp} at least their packing bounds (islands of whole TP
// groups only; the lanes' counts are exact there).
void add_packing(BoundBytes& b, const ParallelLayout& l, const std::vector<uint64_t>& g, const EdgeBytes& e) {
    const uint64_t T = l.size(ParDim::TP);
    std::vector<uint64_t> cells;
    for (uint64_t x : g) {
        if (x % T) return;
        if (x) cells.push_back(x / T);
    }
    auto raise = [&](double& part, uint64_t K, GroupKind kind, double w) {
        part = std::max(part, packing_pieces(cells, K, kind) * w * double(T));
    };
    raise(b.parts.cp, l.size(ParDim::CP), GroupKind::Ring, e.cp);
    raise(b.parts.ep, l.size(ParDim::EP), GroupKind::Clique, e.ep_pair);
    raise(b.parts.dp, l.size(ParDim::DP), GroupKind::Ring, e.dp);
    raise(b.parts.pp, l.size(ParDim::PP), GroupKind::Path, e.pp);
}

BoundBytes separate_bound(const ParallelLayout& l, const std::vector<uint64_t>& g, const EdgeBytes& e) {
    const uint64_t T = l.size(ParDim::TP), C = l.size(ParDim::CP), E = l.size(ParDim::EP), D = l.size(ParDim::DP),
                   P = l.size(ParDim::PP), world = l.world();
    auto fit = [&](uint64_t unit) {
        uint64_t n = 0;
        for (uint64_t x : g) n += x / unit;
        return n;
    };
    auto over = [](uint64_t a, uint64_t b) { return a > b ? double(a - b) : 0.0; };
    // Cells of one TP lane (the ranks with one tp coordinate) island i can
    // hold: its whole TP groups plus one per straddling group it has GPUs of
    // (Lanes).
    const uint64_t S = straddling_groups(g, T);
    std::vector<uint64_t> cap;
    for (uint64_t x : g) cap.push_back(x / T + std::min(x % T, S));
    // Groups of K cells of one lane that can sit whole in islands, all lanes.
    auto lane_fit = [&](uint64_t k) {
        uint64_t n = 0;
        for (uint64_t c : cap) n += c / k;
        return T * n;
    };
    BoundBytes b;
    // TP: the S = groups - sum floor(g_i / T) groups that cannot sit whole
    // straddle; a ring's crossing edges are its arcs, at least 2 for each of
    // them, and at least one in every island with g_i mod T != 0 (its GPUs
    // of straddling groups): TP >= tp * max(2 S, those islands).
    if (T > 1) {
        double ragged = 0;
        for (uint64_t x : g) ragged += x % T != 0;
        b.parts.tp = std::max(over(world / T, fit(T)) * 2, ragged) * e.tp;
    }
    if (C > 1) b.parts.cp = over(world / C, lane_fit(C)) * 2 * e.cp;
    if (E > 1) b.parts.ep = over(world / E, lane_fit(E)) * double(E - 1) * e.ep_pair;
    // DP on its own: a ring has D members of one lane; island i holds at most
    // cap_i of them, so a ring spans at least k_min islands.
    const uint64_t dp_rings = world / std::max<uint64_t>(1, D);
    if (D > 1) {
        std::vector<uint64_t> caps(cap);
        std::sort(caps.rbegin(), caps.rend());
        uint64_t k_min = 0, held = 0;
        for (uint64_t c : caps) {
            if (held >= D) break;
            held += c;
            ++k_min;
        }
        b.parts.dp = k_min >= 2 ? double(dp_rings) * double(k_min) * e.dp : over(dp_rings, lane_fit(D)) * 2 * e.dp;
    }
    const uint64_t pipelines = world / P;
    if (P > 1) b.parts.pp = over(pipelines, lane_fit(P)) * e.pp;
    add_packing(b, l, g, e);
    b.separate = b.parts.cp + b.parts.ep + b.parts.dp + b.parts.pp;
    return b;
}

// The joint bound, per TP lane (the ranks with one tp coordinate; T lanes).
// It holds for placements with the fewest straddling TP groups (the TP
// bound's): then island i holds exactly floor(g_i / T) whole TP groups and at
// most g_i mod T GPUs of others, so n, its cells of one lane, is in
// [floor(g_i / T), floor(g_i / T) + g_i mod T]; each island's term is minimised
// over that range.
// A lane's cells are (x, d, p), x the cp*ep coordinate (X = C*E values). Island
// i touching ne x-values, nd replicas (d) and np stages (p) holds at most
// ne*nd*np cells, touches R >= max(n/nd, ne, np) DP rings (x, p) and
// Q >= max(n/np, ne, nd) pipelines (x, d), and its CP/EP groups (d, p) hold at
// most m = min(X, ne) of their members each, so:
//   EP (C = 1): pairs leaving it >= sum over its groups c (E - c) / 2, least when
//               the groups are filled up to m;
//   CP (E = 1): every group it holds part of crosses >= 1 edge at it;
//   (C, E > 1: the CP/EP term is left out, which only lowers the bound.)
// DP, per island: a ring it holds only part of has arcs there, and a ring's
// crossing edges are its arcs, each arc in one island: DP >= dp * sum_i
// (R_i - W_i), W_i the rings whole in island i. A whole ring has all D
// replicas there, so W_i = 0 unless nd = D, and W_i <= floor(n / D) always
// (then R_i >= ceil(n / D) as the ring count is whole). PP >= pp (sum Q_i -
// pipelines): a pipeline in k islands crosses >= k - 1 times. CP/EP >= their
// sums. The minimum over (ne, np) is taken exactly (all values), over nd < D
// at the breakpoints of the convex relaxation (R, Q real), at nd = D exactly;
// islands too large to enumerate cheaply (ne * np > 65536 choices) make the
// joint bound 0 (the separate one stands). `with_inner` false leaves the
// CP/EP term out (a DP + PP bound, for split_bound).
double island_joint_cost(double n, const ParallelLayout& l, const EdgeBytes& e, bool with_inner) {
    const uint64_t C = l.size(ParDim::CP), E = l.size(ParDim::EP), D = l.size(ParDim::DP), P = l.size(ParDim::PP);
    const uint64_t X = C * E;
    auto inner = [&](double m) {
        if (!with_inner) return 0.0;
        if (C > 1 && E == 1) {
            if (m < double(C)) return std::ceil(n / m - 1e-9) * e.cp;
            return (std::fmod(n, double(C)) > 1e-9 ? 1.0 : 0.0) * e.cp;
        }
        if (E > 1 && C == 1) {
            double q = std::floor(n / m + 1e-9), r = n - q * m;
            if (r < 1e-9) r = 0;
            return (q * m * (double(E) - m) + r * (double(E) - r)) / 2 * e.ep_pair;
        }
        return 0.0;
    };
    if (n <= 0) return 0;
    const uint64_t cells = static_cast<uint64_t>(std::ceil(n - 1e-9));
    const uint64_t ne_max = std::min<uint64_t>(X, cells), np_max = std::min<uint64_t>(P, cells);
    if (ne_max * np_max > 65536) return -1;
    double best = -1;
    for (uint64_t ne = 1; ne <= ne_max; ++ne)
        for (uint64_t np = 1; np <= np_max; ++np) {
            const double lo = std::max(1.0, std::ceil(n / double(ne * np) - 1e-9));
            if (lo > double(D)) continue;  // cannot hold n cells
            const double k1 = double(std::max(ne, np)), k2 = std::max(n / double(np), double(ne));
            auto cost = [&](double nd) { return e.dp * std::max(n / nd, k1) + e.pp * std::max(k2, nd); };
            // nd = D: whole rings possible.
            double c_best = e.dp * (std::max(std::ceil(n / double(D) - 1e-9), k1) - std::floor(n / double(D) + 1e-9)) +
                            e.pp * std::max(k2, double(D));
            if (lo <= double(D) - 1) {  // nd < D: no ring whole here
                double cand[] = {lo, double(D) - 1, n / k1, k2, e.pp > 0 ? std::sqrt(e.dp * n / e.pp) : double(D) - 1};
                for (double c : cand)
                    for (double nd : {std::floor(c), std::ceil(c)}) {
                        nd = std::min(std::max(nd, lo), double(D) - 1);
                        c_best = std::min(c_best, cost(nd));
                    }
            }
            double v = c_best + inner(double(std::min(X, ne)));
            if (best < 0 || v < best) best = v;
        }
    return best;
}

double joint_bound(const ParallelLayout& l, const std::vector<uint64_t>& g, const EdgeBytes& e, bool with_inner) {
    const uint64_t T = l.size(ParDim::TP), X = l.size(ParDim::CP) * l.size(ParDim::EP), D = l.size(ParDim::DP);
    const uint64_t S = straddling_groups(g, T);
    double total = 0;
    for (uint64_t x : g) {
        if (x / T == 0 && x % T == 0) continue;
        if (x % T > 64) continue;  // bounded work: such an island counts 0 (every term is >= 0)
        const Lanes r = lanes_of(x, T, S);
        std::vector<double> v;
        for (uint64_t n = r.lo; n <= r.lo + r.cap; ++n) {
            v.push_back(island_joint_cost(double(n), l, e, with_inner));
            if (v.back() < 0 && n > 0) return 0;  // too large to enumerate
            v.back() = std::max(0.0, v.back());
        }
        total += over_lanes(T, r, [&](uint64_t n) { return v[n - r.lo]; });
    }
    total -= e.pp * double(X) * double(D) * double(T);
    return std::max(0.0, total);
}

// The split bound: CP + EP and DP + PP bounded apart (their edges are
// different edges, so two lower bounds add). DP + PP: the larger of the
// separate terms and joint_bound without its CP/EP term. CP + EP: the larger
// of the separate terms and the block term, per TP lane (same placements as
// joint_bound): a lane's cells with one (d, p) form a block of X = C*E cells
// (the C x E grid of cp and ep coordinates; CP rings are its columns (one e),
// EP groups its rows (one c)), and every CP/EP edge lies inside one block.
// An island holding n cells of the lane with n mod X = r != 0 holds part of at
// least one block. A piece A of a block (0 < |A| < X) pays at its boundary
//   cut(A) = 2 cp per column it holds part of (a ring's arc has two crossing
//            edges; a ring of 2 has 2 edges) + ep_pair * sum over rows j (E - j),
//   j the row's cells in A;
// every crossing edge/pair has its ends in two pieces, so a lane crosses at
// least half the sum over pieces of cut(piece). An island's pieces: one of
// size r (sizes are below X and sum to r mod X) or at least two; so its
// pieces pay >= min(beta(r), 2 beta_1), beta(a) the least cut of an a-cell
// piece, beta_1 the least over all sizes. beta(a) is bounded below over the
// column counts: F full columns, f partial ones (a - C F cells in them, 1 to
// C - 1 each), every row then holds F..F+f cells summing to a, and the
// concave sum of j (E - j) is least at a vertex of that box (all rows but one
// at an end), enumerated. Islands with g_i mod T > 64, and cp*ep blocks
// larger than kMaxBlock, count 0 (bounded work).
constexpr uint64_t kMaxBlock = 256;  // cp*ep blocks larger than this: the block terms count 0

double block_cut(uint64_t a, const ParallelLayout& l, const EdgeBytes& e) {
    const uint64_t C = l.size(ParDim::CP), E = l.size(ParDim::EP);
    double best = -1;
    for (uint64_t F = 0; F * C <= a && F <= E; ++F) {
        const uint64_t rest = a - F * C;
        for (uint64_t f = 0; F + f <= E; ++f) {
            if (f == 0 ? rest != 0 : (rest < f || rest > f * (C - 1))) continue;
            // rows: C of them, each F..F+f cells, sum a; least sum of j (E - j)
            double ep_min = -1;
            for (uint64_t up = 0; up < C; ++up) {  // `up` rows at F + f, one row free, the rest at F
                const uint64_t fixed = up * (F + f) + (C - up - 1) * F;
                if (fixed > a) break;
                const uint64_t j = a - fixed;
                if (j < F || j > F + f) continue;
                const double v = double(up) * double(F + f) * double(E - F - f) +
                                 double(C - up - 1) * double(F) * double(E - F) + double(j) * double(E - j);
                if (ep_min < 0 || v < ep_min) ep_min = v;
            }
            if (ep_min < 0) continue;
            const double v = (C > 1 ? 2.0 * double(f) * e.cp : 0.0) + ep_min * e.ep_pair;
            if (best < 0 || v < best) best = v;
        }
    }
    return std::max(0.0, best);
}

double block_bound(const ParallelLayout& l, const std::vector<uint64_t>& g, const EdgeBytes& e) {
    const uint64_t T = l.size(ParDim::TP), X = l.size(ParDim::CP) * l.size(ParDim::EP);
    if (X <= 1 || X > kMaxBlock) return 0;  // block_cut is O(C^2 E^3) per size: bounded work
    std::vector<double> beta(X, 0);
    double beta1 = -1;
    for (uint64_t a = 1; a < X; ++a) {
        beta[a] = block_cut(a, l, e);
        if (beta1 < 0 || beta[a] < beta1) beta1 = beta[a];
    }
    const uint64_t S = straddling_groups(g, T);
    double total = 0;
    for (uint64_t x : g) {
        if (x % T > 64) continue;
        total += over_lanes(T, lanes_of(x, T, S), [&](uint64_t n) {
            const uint64_t r = n % X;
            return r == 0 ? 0.0 : std::min(beta[r], 2 * beta1);
        });
    }
    return total / 2;
}

// The projection bound, per TP lane, for the same placements as joint_bound.
// Island i's cells of one lane form a set S over the lane's coordinates of
// size > 1 among c, e, d, p (k of them). Projecting S along coordinate j gives
// the groups of dimension j it touches (CP groups, EP groups, DP rings,
// pipelines): y_j of them, and |S|^(k-1) <= prod_j y_j (Loomis-Whitney). Each
// CP group, EP group or DP ring the island holds only part of crosses at it
// (a ring's piece has two boundary half-edges: >= 1 edge; an EP part of a
// members >= (E - 1) / 2 pairs), and it holds at most floor(n / size) whole
// ones; a pipeline in k islands crosses >= k - 1 times. So a lane crosses at
// least
//   sum_i [sum_j a_j (y_ij - whole_ij)] - pp (pipelines of the lane)
// (a_j: the CP edge, (E - 1) / 2 EP pairs, the DP edge, the PP edge; no whole
// term for PP). Each island's term is minimised over real y_j in
// [ceil(n / size_j), groups_j] with prod y_j >= n^(k-1): a convex problem in
// log y, solved exactly by water-filling (y_j = clamp(lambda / a_j), lambda by
// bisection, the lower side kept), for n from floor(g_i / T) to that plus
// g_i mod T (the lane's cells the island can hold; an island with more than 64
// such values counts 0, so the work stays bounded). Each term is >= 0.
double island_projection_cost(double n, const ParallelLayout& l, const EdgeBytes& e) {
    if (n <= 0) return 0;
    const double lane_cells = double(l.world() / l.size(ParDim::TP));
    struct Var {
        double a, lo, hi;
    };
    std::vector<Var> v;
    double whole = 0;
    for (ParDim d : {ParDim::CP, ParDim::EP, ParDim::DP, ParDim::PP}) {
        const double size = double(l.size(d));
        if (size <= 1) continue;
        const double a = d == ParDim::CP ? e.cp : d == ParDim::EP ? e.ep_pair * (size - 1) / 2
                         : d == ParDim::DP ? e.dp : e.pp;
        v.push_back({a, std::ceil(n / size - 1e-9), lane_cells / size});
        if (d != ParDim::PP) whole += a * std::floor(n / size + 1e-9);
    }
    if (v.empty()) return 0;
    const double log_k = double(v.size() - 1) * std::log(n);
    auto y_of = [](const Var& x, double lambda) {
        return x.a > 0 ? std::min(std::max(lambda / x.a, x.lo), x.hi) : x.hi;
    };
    auto log_prod = [&](double lambda) {
        double s = 0;
        for (const Var& x : v) s += std::log(y_of(x, lambda));
        return s;
    };
    double lam_lo = 0;
    if (log_prod(0) < log_k - 1e-12) {
        double lo = 0, hi = 1;
        while (log_prod(hi) < log_k && hi < 1e300) hi *= 2;
        for (int it = 0; it < 200; ++it) {
            const double mid = (lo + hi) / 2;
            (log_prod(mid) < log_k ? lo : hi) = mid;
        }
        lam_lo = lo;  // the lower side: its cost is not above the minimum
    }
    double cost = 0;
    for (const Var& x : v) cost += x.a * y_of(x, lam_lo);
    return cost - whole;
}

double projection_bound(const ParallelLayout& l, const std::vector<uint64_t>& g, const EdgeBytes& e) {
    const uint64_t T = l.size(ParDim::TP);
    const double pipelines = l.size(ParDim::PP) > 1 ? double(l.size(ParDim::CP) * l.size(ParDim::EP) * l.size(ParDim::DP)) : 0;
    std::map<uint64_t, double> memo;
    auto cost = [&](uint64_t n) {
        auto it = memo.find(n);
        if (it != memo.end()) return it->second;
        return memo[n] = island_projection_cost(double(n), l, e);
    };
    const uint64_t S = straddling_groups(g, T);
    double total = 0;
    for (uint64_t x : g) {
        if (x % T > 64) continue;  // bounded work: such an island counts 0 (every term is >= 0)
        total += over_lanes(T, lanes_of(x, T, S), cost);
    }
    total -= e.pp * pipelines * double(T);
    return std::max(0.0, total);
}

// The cut bound, per TP lane (same placements as joint_bound). Every
// CP/EP/DP/PP edge lies inside one lane, and every crossing edge (EP pair) has
// its two ends in two islands, so a lane crosses exactly half the sum over
// islands of the weighted edge boundary of the island's cells S_i:
//   lane bytes = 1/2 sum_i cut(S_i) >= 1/2 sum_i phi(|S_i|),
// phi(n) a lower bound of cut(S) over every set S of n cells of the lane, the
// lane being the product graph (cp x ep block) x DP ring x PP path. phi is
// built one dimension at a time: cut it the sets of G x H, H a ring or path of
// k slices, by slices S_1..S_k (each a set of G): edges inside slice j cut at
// least phi_G(|S_j|); between neighbouring slices the edges match cells one to
// one, so they cut |S_j xor S_j'| >= | |S_j| - |S_j'| |; round a ring the
// differences sum to at least 2 (max - min) (a ring of 2 has 2 edges), along a
// path to at least max - min. So
//   phi_{G x H}(n) >= min over sizes n_1..n_k in [0, |G|] summing to n of
//                     sum_j phi_G(n_j) + w_H * (2 or 1) * (max_j n_j - min_j n_j),
// computed exactly: for each (min, max) a knapsack over k values in that range.
// phi of the block is block_cut (0 for the empty and the whole block). Both
// orders (DP then PP, PP then DP) are valid; each island takes the larger. The
// work is bounded (cut_work steps, 2e8 by default). Where the knapsacks would pass it, a
// relaxation stands in (couple_relaxed): for a given (min, max) the least sum
// of phi over k values in [min, max] summing to n is at least k times the
// lower convex envelope of phi on [min, max] at n / k (Jensen), so
//   phi_{G x H}(n) >= min over (min, max) with min <= n/k <= max of
//                     k env_[min,max](n / k) + w_H (2 or 1) (max - min);
// it costs (hi + 1)^2 (hi + N) steps (kRelaxedWork at most); a lane too large
// for both makes this term 0.
constexpr double kRelaxedWork = 5e7;

std::vector<double> couple_relaxed(const std::vector<double>& phi, uint64_t k, double w) {
    const uint64_t hi = phi.size() - 1, N = hi * k;
    if (k <= 1) return phi;
    if (double(hi + 1) * double(hi + 1) * double(hi + N + 2) > kRelaxedWork) return {};
    std::vector<double> out(static_cast<size_t>(N + 1), 1e300);
    std::vector<uint64_t> hull;
    for (uint64_t m = 0; m <= hi; ++m)
        for (uint64_t M = m; M <= hi; ++M) {
            // lower convex hull of (v, phi[v]), v in [m, M] (monotone chain)
            hull.clear();
            for (uint64_t v = m; v <= M; ++v) {
                while (hull.size() >= 2) {
                    const uint64_t a = hull[hull.size() - 2], b = hull.back();
                    // drop b when it lies on or above the segment a..v
                    if ((phi[b] - phi[a]) * double(v - a) >= (phi[v] - phi[a]) * double(b - a))
                        hull.pop_back();
                    else
                        break;
                }
                hull.push_back(v);
            }
            const double spread = w * double(M - m);
            size_t seg = 0;
            for (uint64_t n = k * m; n <= k * M; ++n) {
                const double x = double(n) / double(k);
                while (seg + 1 < hull.size() && double(hull[seg + 1]) < x) ++seg;
                double env;
                if (seg + 1 >= hull.size()) {
                    env = phi[hull[seg]];
                } else {
                    const uint64_t a = hull[seg], b = hull[seg + 1];
                    env = phi[a] + (phi[b] - phi[a]) * (x - double(a)) / double(b - a);
                }
                out[n] = std::min(out[n], double(k) * env + spread);
            }
        }
    // a hair below, for rounding in the interpolation: never above the exact value
    for (double& v : out) v = std::max(0.0, v * (1 - 1e-12));
    return out;
}

// phi of G x H from phi of G (index = cells, 0..hi): k slices, w per unit of
// spread. Empty when the work would pass `budget` (which it decrements).
std::vector<double> couple_exact(const std::vector<double>& phi, uint64_t k, double w, double& budget) {
    const uint64_t hi = phi.size() - 1, N = hi * k;
    if (k <= 1) return phi;
    const double work = double(hi + 1) * double(hi + 2) * double(hi + 1) / 6 * double(k) * double(N + 1);
    if (work > budget) return {};
    budget -= work;
    const double inf = 1e300;
    std::vector<double> out(static_cast<size_t>(N + 1), inf), f(static_cast<size_t>(N + 1)), g(f.size());
    for (uint64_t m = 0; m <= hi; ++m)
        for (uint64_t M = m; M <= hi; ++M) {
            // f: least sum of phi over j values in [m, M] with sum s
            std::fill(f.begin(), f.end(), inf);
            f[0] = 0;
            for (uint64_t j = 0; j < k; ++j) {  // sums of j values lie in [j m, j M]
                std::fill(g.begin() + static_cast<std::ptrdiff_t>((j + 1) * m),
                          g.begin() + static_cast<std::ptrdiff_t>((j + 1) * M + 1), inf);
                for (uint64_t s = j * m; s <= j * M; ++s) {
                    const double base = f[s];
                    if (base >= inf) continue;
                    double* to = g.data() + s;
                    for (uint64_t v = m; v <= M; ++v) to[v] = std::min(to[v], base + phi[v]);
                }
                f.swap(g);
            }
            const double spread = w * double(M - m);
            for (uint64_t s = k * m; s <= k * M; ++s)
                if (f[s] < inf) out[s] = std::min(out[s], f[s] + spread);
        }
    return out;
}

// phi of one lane, both ways round (see above): `a` = block x DP ring x PP
// path built DP first, `b` PP first, and the slices on the way: `stage` =
// block x DP ring (the cells of one stage), `pipe` = block x PP path (one
// pipeline). Empty where the work would pass the budget.
struct LanePhi {
    std::vector<double> stage, a, pipe, b;
};

LanePhi lane_phi(const ParallelLayout& l, const EdgeBytes& e, double exact_work) {
    const uint64_t X = l.size(ParDim::CP) * l.size(ParDim::EP), D = l.size(ParDim::DP), P = l.size(ParDim::PP);
    LanePhi out;
    if (X > kMaxBlock) return out;  // bounded work, as block_bound
    std::vector<double> block(static_cast<size_t>(X + 1), 0);
    for (uint64_t a = 1; a < X; ++a) block[a] = block_cut(a, l, e);
    double budget = exact_work;
    auto couple = [&](const std::vector<double>& phi, uint64_t k, double w, double& left) {
        std::vector<double> v = couple_exact(phi, k, w, left);
        return v.empty() ? couple_relaxed(phi, k, w) : v;
    };
    const double ring = 2;  // round a ring the differences sum to >= 2 (max - min)
    out.stage = couple(block, D, ring * e.dp, budget);
    out.a = out.stage.empty() ? out.stage : couple(out.stage, P, e.pp, budget);
    out.pipe = couple(block, P, e.pp, budget);
    out.b = out.pipe.empty() ? out.pipe : couple(out.pipe, D, ring * e.dp, budget);
    return out;
}

double cut_bound(const ParallelLayout& l, const std::vector<uint64_t>& g, const LanePhi& lp) {
    const uint64_t T = l.size(ParDim::TP);
    const std::vector<double>& a = lp.a;
    const std::vector<double>& b = lp.b;
    if (a.empty() && b.empty()) return 0;
    auto phi = [&](uint64_t n) {
        double v = 0;
        if (!a.empty() && n < a.size()) v = std::max(v, a[n]);
        if (!b.empty() && n < b.size()) v = std::max(v, b[n]);
        return v;
    };
    // A set and its complement have the same cut: psi(n) = max(phi(n), phi(N - n)).
    const uint64_t N = l.world() / T;
    auto psi = [&](uint64_t n) { return n <= N ? std::max(phi(n), phi(N - n)) : 0.0; };
    // Islands grouped: merging the islands of each group into one drops
    // edges (an edge crossing between groups crosses between islands), so a
    // lane crosses at least 1/2 sum over groups of psi(cells of the group),
    // for every partition of the islands. Every partition is tried for up to
    // 9 islands (at most 21,147), else the islands one by one and each island
    // against the rest. A group's cells in a lane: the sum of its islands'
    // (Lanes), at most S straddling cells more than their whole groups; summed
    // over the lanes (over_lanes, memoised by the group's lanes).
    const uint64_t S = straddling_groups(g, T);
    std::vector<Lanes> range;
    for (uint64_t x : g) {
        if (x == 0) continue;
        if (x % T > 64) return 0;  // bounded work
        range.push_back(lanes_of(x, T, S));
    }
    const size_t k = range.size();
    std::map<std::tuple<uint64_t, uint64_t, uint64_t>, double> memo;
    auto value = [&](const std::vector<uint32_t>& group_of, uint32_t groups) {
        std::vector<Lanes> sum(groups);
        for (size_t i = 0; i < k; ++i) {
            Lanes& to = sum[group_of[i]];
            to.lo += range[i].lo;
            to.extra += range[i].extra;
            to.cap += range[i].cap;
        }
        double v = 0;
        for (Lanes& r : sum) {
            r.cap = std::min(r.cap, S);
            const auto key = std::make_tuple(r.lo, r.extra, r.cap);
            auto it = memo.find(key);
            if (it == memo.end()) it = memo.emplace(key, over_lanes(T, r, psi)).first;
            v += it->second;
        }
        return v / 2;
    };
    double total = 0;
    std::vector<uint32_t> rgs(k, 0);  // restricted growth string: island -> group
    if (k <= 9) {
        std::vector<uint32_t> top(k, 1);  // top[i] = max(rgs[0..i-1]) + 1 (i >= 1)
        if (k > 0) top[0] = 0;
        while (true) {
            uint32_t groups = 0;
            for (uint32_t x : rgs) groups = std::max(groups, x + 1);
            total = std::max(total, value(rgs, groups));
            size_t i = k;  // next string: the last position that can grow
            while (i-- > 1 && rgs[i] >= top[i]) {}
            if (i == 0 || k < 2) break;
            ++rgs[i];
            for (size_t j = i + 1; j < k; ++j) {
                rgs[j] = 0;
                top[j] = std::max(top[j - 1], rgs[j - 1] + 1);
            }
        }
    } else {
        for (size_t i = 0; i < k; ++i) rgs[i] = uint32_t(i);
        total = value(rgs, uint32_t(k));
        for (size_t i = 0; i < k; ++i) {
            std::vector<uint32_t> two(k, 0);
            two[i] = 1;
            total = std::max(total, value(two, 2));
        }
    }
    return total;
}

// The slice bound (`stages`), per TP lane. The lane's cells of one stage (one
// pp coordinate: the block x DP ring, phi `stage`) are split among the
// islands, island i holding c_i of them, at most its cells' upper end
// cap_i = g_i / T + min(g_i mod T, S) (Lanes). The stage's own
// edges (CP, EP, DP) that cross are half the sum over islands of the cut, inside
// the stage, of the island's part, and a part and the rest of the stage have
// the same cut, so they are at least
//   h = 1/2 min over sizes c_1.. in [1, cmax] summing to the stage's cells S
//       of sum_j max(phi(c_j), phi(S - c_j)),
// cmax the largest cap_i (sizes may repeat: a relaxation; h = 0 where
// cmax >= S, a stage whole in one island). Every stage pays h; the PP edges
// are other edges, bounded apart by the separate term. So the lane pays
// P h, the job T P h + parts.pp; the same with pipelines (one dp coordinate,
// phi `pipe`, D of them) and parts.dp; the larger is taken. This sees what
// cut_bound does not: every stage must be cut when no island holds one, even
// where the islands' cell counts alone are cheap to cut. Work: S * cmax steps
// per slice kind, skipped past kSliceWork.
constexpr double kSliceWork = 1e8;

double slice_bound(const std::vector<uint64_t>& g, uint64_t T, const std::vector<double>& phi, uint64_t slices) {
    if (phi.size() < 2) return 0;
    const uint64_t S = phi.size() - 1;
    uint64_t cmax = 0;
    const uint64_t straddling = straddling_groups(g, T);
    for (uint64_t x : g) cmax = std::max(cmax, std::min(S, x / T + std::min(x % T, straddling)));
    if (cmax >= S || cmax == 0) return 0;
    if (double(S) * double(cmax) > kSliceWork) return 0;
    auto psi = [&](uint64_t n) { return std::max(phi[n], phi[S - n]); };
    std::vector<double> h(static_cast<size_t>(S + 1), 1e300);
    h[0] = 0;
    for (uint64_t s = 1; s <= S; ++s)
        for (uint64_t v = 1; v <= std::min(cmax, s); ++v) h[s] = std::min(h[s], h[s - v] + psi(v));
    return std::max(0.0, h[S] / 2 * (1 - 1e-12)) * double(slices) * double(T);
}

double stage_bound(const ParallelLayout& l, const std::vector<uint64_t>& g, const LanePhi& lp, const CrossBytes& parts) {
    const uint64_t T = l.size(ParDim::TP);
    const double stages = slice_bound(g, T, lp.stage, l.size(ParDim::PP)) + parts.pp;
    const double pipes = slice_bound(g, T, lp.pipe, l.size(ParDim::DP)) + parts.dp;
    return std::max(stages, pipes);
}


// A set of c of a slice's S cells and the other S - c cut the same edges:
// psi(c) = max(phi(c), phi(S - c)) bounds both.
std::vector<double> both_sides(const std::vector<double>& phi) {
    const size_t S = phi.size() - 1;
    std::vector<double> psi(S + 1);
    for (size_t c = 0; c <= S; ++c) psi[c] = std::max(phi[c], phi[S - c]);
    return psi;
}

// The ends bound (`ends`), per TP lane: the stages of the lane coupled along
// the pipeline, with the pipeline's two ends priced. Island i holds c_ip
// cells of stage p (a slice: the block x DP ring, `stage` phi); the stage's
// own edges that cross are at least 1/2 sum_i psi(c_ip) (psi(c) =
// max(phi(c), phi(S - c)), cut_bound's argument inside one stage), and the PP
// edges between stages p and p + 1 match their cells one to one, so at least
// sum_i max(0, c_ip - c_i,p+1) = 1/2 sum_i |c_ip - c_i,p+1| of them cross.
// So the lane crosses at least 1/2 min sum_i F_i(c_i.), F_i(c) = sum_p
// psi(c_p) + pp * sum_p |c_p - c_p+1|, over integer c with each island's
// sum_p c_ip its cell count in the lane (Lanes; the lanes summed by
// over_lanes) and each stage's sum_i c_ip = S. cut_bound bounds each island alone, and then every
// island may put its cells at a pipeline end (one stage boundary instead of
// two), although the pipeline has two ends. Here the stage sums are
// dualised (Lagrange): for any prices mu_p,
//   min sum_i F_i >= S sum_p mu_p + sum_i min over c_i. of (F_i(c) - sum_p mu_p c_p),
// each island's minimum a dynamic programme over the stages (state: the
// stage's cells and the cells so far; the |c_p - c_p+1| step by a distance
// transform), O(P S hi_i); islands with the same range solve it once. The
// prices move by subgradient steps (against the stages' excess, mirrored: the
// problem is symmetric end to end; step pp / sqrt(k), pp being the price of an
// end's worth per cell), at most kEndsSteps and as many as kEndsWork allows,
// none (the term 0) where that is under kEndsMinSteps. Every value of the
// dual is a valid bound; the largest is kept. Deterministic.
constexpr double kEndsWork = 3e7;
constexpr int kEndsMinSteps = 8, kEndsSteps = 60;

struct EndsIsland {
    Lanes lanes;                               // its cells per lane
    std::vector<double> value;                 // per count n = lo..lo+cap: the least F - mu.c
    std::vector<std::vector<uint64_t>> cells;  // per count: that minimum's cells per stage
    std::vector<double> f;                     // the programme's table, kept between calls
};

// f[(p * (hi + 1) + s) * (S + 1) + c]: the least F - mu.c over stages 0..p
// with c cells at p and s in all (s <= hi = lo + cap, c <= min(s, S)).
void ends_island(EndsIsland& is, const std::vector<double>& psi, const std::vector<double>& mu, double a) {
    const uint64_t S = psi.size() - 1, P = mu.size(), H = is.lanes.lo + is.lanes.cap, W = S + 1, rows = H + 1;
    const double inf = 1e300;
    is.f.assign(P * rows * W, inf);
    double* f = is.f.data();
    for (uint64_t c = 0; c <= std::min(S, H); ++c) f[c * W + c] = psi[c] - mu[0] * double(c);
    std::vector<double> g(W), cost(W);
    for (uint64_t p = 1; p < P; ++p) {
        const double* prev = f + (p - 1) * rows * W;
        double* cur = f + p * rows * W;
        for (uint64_t c = 0; c <= S; ++c) cost[c] = psi[c] - mu[p] * double(c);
        const uint64_t s_max = std::min(H, p * S);  // cells in stages 0..p-1
        for (uint64_t s = 0; s <= s_max; ++s) {
            const double* h = prev + s * W;
            const uint64_t top = std::min(S, s);  // h[c] is inf above
            for (uint64_t c = 0; c <= top; ++c) g[c] = h[c];
            for (uint64_t c = top + 1; c <= S; ++c) g[c] = g[c - 1] + a;
            for (uint64_t c = 1; c <= top; ++c) g[c] = std::min(g[c], g[c - 1] + a);
            for (uint64_t c = top; c-- > 0;) g[c] = std::min(g[c], g[c + 1] + a);
            const uint64_t room = std::min(S, H - s);
            double* to = cur + s * W;  // row s + c, column c: stride W + 1
            for (uint64_t c = 0; c <= room; ++c) {
                const double v = g[c] + cost[c];
                double& t = to[c * (W + 1)];
                if (v < t) t = v;
            }
        }
    }
    // each count's least end state, then back
    const double* last = f + (P - 1) * rows * W;
    is.value.assign(is.lanes.cap + 1, inf);
    is.cells.assign(is.lanes.cap + 1, std::vector<uint64_t>(P, 0));
    for (uint64_t n = is.lanes.lo; n <= H; ++n) {
        double best = inf;
        uint64_t bc = 0;
        for (uint64_t c = 0; c <= std::min(S, n); ++c)
            if (last[n * W + c] < best) {
                best = last[n * W + c];
                bc = c;
            }
        is.value[n - is.lanes.lo] = best;
        std::vector<uint64_t>& cells = is.cells[n - is.lanes.lo];
        if (best >= inf) continue;  // more cells than the stages hold
        uint64_t bs = n;
        cells[P - 1] = bc;
        for (uint64_t p = P - 1; p > 0; --p) {
            const uint64_t s = bs - bc;
            const double* prev = f + (p - 1) * rows * W + s * W;
            uint64_t from = 0;
            double least = inf;
            for (uint64_t c = 0; c <= std::min(S, s); ++c) {
                const double v = prev[c] + a * double(c > bc ? c - bc : bc - c);
                if (v < least) {
                    least = v;
                    from = c;
                }
            }
            bs = s;
            bc = from;
            cells[p - 1] = bc;
        }
    }
}

double ends_bound(const ParallelLayout& l, const std::vector<uint64_t>& g, const LanePhi& lp, const EdgeBytes& e) {
    const uint64_t T = l.size(ParDim::TP), P = l.size(ParDim::PP);
    if (P < 2 || lp.stage.size() < 2) return 0;
    const uint64_t S = lp.stage.size() - 1, straddling = straddling_groups(g, T);
    const std::vector<double> psi = both_sides(lp.stage);
    // islands with equal lanes solve the same programme: one each
    std::vector<EndsIsland> kinds;
    std::vector<uint64_t> count;
    double work = 0;
    for (uint64_t x : g) {
        if (x == 0) continue;
        if (x % T > 64) return 0;  // bounded work
        const Lanes r = lanes_of(x, T, straddling);
        size_t k = 0;
        while (k < kinds.size() && (kinds[k].lanes.lo != r.lo || kinds[k].lanes.extra != r.extra)) ++k;
        if (k == kinds.size()) {
            kinds.push_back({r, {}, {}, {}});
            count.push_back(0);
            work += double(P) * double(S + 1) * double(r.lo + r.cap + 1);
        }
        ++count[k];
    }
    if (work * kEndsMinSteps > kEndsWork) return 0;
    const int steps = int(std::min<double>(kEndsSteps, kEndsWork / work));
    std::vector<double> mu(P, 0.0), excess(P);
    std::vector<uint64_t> lanes_with;
    double best = 0;
    const double step0 = e.pp;  // a price of one PP edge per cell: the scale of an end's worth
    for (int it = 0; it < steps; ++it) {
        double v = 0;
        for (double m : mu) v += m * double(S) * double(T);
        std::fill(excess.begin(), excess.end(), -double(S) * double(T));
        for (size_t k = 0; k < kinds.size(); ++k) {
            EndsIsland& is = kinds[k];
            ends_island(is, psi, mu, e.pp);
            v += double(count[k]) *
                 over_lanes(T, is.lanes, [&](uint64_t n) { return is.value[n - is.lanes.lo]; }, &lanes_with);
            for (size_t x = 0; x < lanes_with.size(); ++x)
                for (uint64_t p = 0; p < P; ++p)
                    excess[p] += double(count[k]) * double(lanes_with[x]) * double(is.cells[x][p]);
        }
        if (v > 1e299) return 0;  // an island with more cells than the lane (no placement)
        best = std::max(best, v);
        double norm = 0;
        for (uint64_t p = 0; p < P; ++p) norm = std::max(norm, std::fabs(excess[p] + excess[P - 1 - p]) / 2);
        if (norm <= 0) break;  // the islands' choices fit the stages: the dual's optimum
        const double t = step0 / std::sqrt(double(it + 1));
        std::vector<double> next(mu);
        for (uint64_t p = 0; p < P; ++p) next[p] -= t * (excess[p] + excess[P - 1 - p]) / 2 / norm;
        mu.swap(next);
    }
    return std::max(0.0, best / 2 * (1 - 1e-12));
}

}  // namespace

std::vector<double> stage_cut_bound(const ParallelLayout& l, const EdgeBytes& e) {
    const uint64_t X = l.size(ParDim::CP) * l.size(ParDim::EP), D = l.size(ParDim::DP);
    if (X > kMaxBlock) return {};
    std::vector<double> block(static_cast<size_t>(X + 1), 0);
    for (uint64_t a = 1; a < X; ++a) block[a] = block_cut(a, l, e);
    double budget = 2e8;
    std::vector<double> phi = couple_exact(block, D, 2 * e.dp, budget);
    if (phi.empty()) phi = couple_relaxed(block, D, 2 * e.dp);
    return phi.empty() ? phi : both_sides(phi);
}

BoundBytes lower_bound_bytes(const ParallelLayout& l, const std::vector<uint64_t>& g, const EdgeBytes& e,
                             double cut_work) {
    BoundBytes b = separate_bound(l, g, e);
    b.joint = joint_bound(l, g, e, true);
    b.projection = projection_bound(l, g, e);
    b.blocks = block_bound(l, g, e);
    const LanePhi lp = lane_phi(l, e, cut_work);
    b.cut = cut_bound(l, g, lp);
    b.stages = stage_bound(l, g, lp, b.parts);
    b.ends = ends_bound(l, g, lp, e);
    b.split = std::max(b.parts.cp + b.parts.ep, b.blocks) +
              std::max(b.parts.dp + b.parts.pp, joint_bound(l, g, e, false));
    return b;
}

}  // namespace gputopo
