#include "topo/fabric/layout_traffic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "topo/core/errors.hpp"

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
    bool seen_params = false;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t comma = text.find(',', pos);
        std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        size_t eq = item.find('=');
        if (eq == std::string::npos) bad_model(text, "'" + item + "' is not KEY=VALUE");
        std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        if (key == "params") {
            m.params = number(text, key, value, 1e15);
            seen_params = true;
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
            bad_model(text, "unknown key '" + key +
                                "' (known: params, layers, hidden, seq, micro-batch, micro-batches, top-k)");
        }
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    if (!seen_params) bad_model(text, "params is missing");
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

double BoundBytes::total() const {
    return parts.tp + parts.cp + parts.ep + std::max(separate_dp_pp, joint_dp_pp);
}

BoundBytes lower_bound_bytes(const ParallelLayout& l, const std::vector<uint64_t>& g, const EdgeBytes& e) {
    const uint64_t T = l.size(ParDim::TP), C = l.size(ParDim::CP), E = l.size(ParDim::EP), D = l.size(ParDim::DP),
                   P = l.size(ParDim::PP), world = l.world();
    auto fit = [&](uint64_t unit) {
        uint64_t n = 0;
        for (uint64_t x : g) n += x / unit;
        return n;
    };
    auto over = [](uint64_t a, uint64_t b) { return a > b ? double(a - b) : 0.0; };
    BoundBytes b;
    if (T > 1) b.parts.tp = over(world / T, fit(T)) * 2 * e.tp;
    if (C > 1) b.parts.cp = over(world / C, T * fit(T * C)) * 2 * e.cp;
    if (E > 1) b.parts.ep = over(world / E, T * fit(T * E)) * double(E - 1) * e.ep_pair;
    // DP on its own: a ring has one member in each of D TP groups; island i
    // holds at most ceil(g_i / T) of them.
    const uint64_t dp_rings = world / std::max<uint64_t>(1, D);
    if (D > 1) {
        std::vector<uint64_t> caps;
        for (uint64_t x : g) caps.push_back((x + T - 1) / T);
        std::sort(caps.rbegin(), caps.rend());
        uint64_t k_min = 0, held = 0;
        for (uint64_t c : caps) {
            if (held >= D) break;
            held += c;
            ++k_min;
        }
        b.parts.dp = k_min >= 2 ? double(dp_rings) * double(k_min) * e.dp : over(dp_rings, T * fit(D * T)) * 2 * e.dp;
    }
    const uint64_t pipelines = world / P;
    if (P > 1) b.parts.pp = over(pipelines, T * fit(T * P)) * e.pp;
    b.separate_dp_pp = b.parts.dp + b.parts.pp;
    // DP and PP together, per TP lane (T of them), the C*E sub-lanes of a TP
    // lane merged (the per-island cost is subadditive, so merging only lowers it).
    if (D > 1 && P > 1) {
        const double rows_max = double(P * C * E);
        double lane = 0, single_rows = 0;
        for (uint64_t x : g) {
            const double n = double(x) / double(T);  // cells of one TP lane in this island
            if (n <= 0) continue;
            // min over r in [1, rows_max] of dp r + pp n / r: at r* = sqrt(pp n / dp), clamped, integer neighbours
            double best = -1;
            double rs = e.dp > 0 ? std::sqrt(e.pp * n / e.dp) : rows_max;
            for (double r : {std::floor(rs), std::ceil(rs), 1.0, rows_max}) {
                r = std::min(std::max(r, 1.0), rows_max);
                double v = e.dp * r + e.pp * n / r;
                if (best < 0 || v < best) best = v;
            }
            lane += best;
            single_rows += std::floor(n / double(D));
        }
        lane -= e.pp * double(D) * double(C * E) + e.dp * std::min(rows_max, single_rows);
        b.joint_dp_pp = std::max(0.0, lane * double(T));
    }
    return b;
}

}  // namespace gputopo
