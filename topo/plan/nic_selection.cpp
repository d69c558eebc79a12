#include "topo/plan/nic_selection.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "topo/core/distance.hpp"
#include "topo/core/strings.hpp"

namespace gputopo {

namespace {

// "mlx5_9" before "mlx5_10": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0, db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
        if (da && db) {
            size_t ei = i, ej = j;
            while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
            while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
            std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
            na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
            nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
            if (na.size() != nb.size()) return na.size() < nb.size();
            if (na != nb) return na < nb;
            i = ei;
            j = ej;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

// PCI order; functions of one device (ports of a dual-port card) by name, naturally.
bool nic_before(const Nic& a, const Nic& b) {
    if (a.pci != b.pci) return a.pci < b.pci;
    return natural_less(a.name, b.name);
}

// The one "nearest": indices (node order) of the NICs that pass `counts` with the
// smallest gpu_nic_path() rank from GPU `gpu`.
template <class Pred>
std::vector<size_t> nearest_where(const Node& node, int gpu, Pred counts) {
    std::vector<size_t> best;
    int best_rank = 0;
    for (size_t i = 0; i < node.nics.size(); ++i) {
        if (!counts(node.nics[i])) continue;
        int r = gpu_nic_path(node, gpu, i).rank();
        if (best.empty() || r < best_rank) {
            best.assign(1, i);
            best_rank = r;
        } else if (r == best_rank) {
            best.push_back(i);
        }
    }
    return best;
}

// A NIC meant for GPU traffic, whatever its port state.
bool for_gpu_traffic(const Nic& n) { return n.rdma && !n.storage; }

}  // namespace

std::vector<size_t> nearest_nics(const Node& node, int gpu) {
    std::vector<size_t> best = nearest_where(node, gpu, [](const Nic& n) { return n.usable(); });
    std::stable_sort(best.begin(), best.end(), [&](size_t x, size_t y) { return nic_before(node.nics[x], node.nics[y]); });
    return best;
}

std::vector<std::vector<std::string>> select_nics(const Node& node, const std::vector<std::vector<int>>& task_gpus) {
    struct Slot {
        size_t task, pos;
        std::vector<size_t> nearest;
        int rank;  // distance class rank of the nearest NICs
    };
    std::vector<Slot> slots;
    std::vector<std::vector<size_t>> nearest_of(node.gpus.size());
    std::vector<bool> known(node.gpus.size(), false);
    for (size_t t = 0; t < task_gpus.size(); ++t)
        for (size_t p = 0; p < task_gpus[t].size(); ++p) {
            int g = task_gpus[t][p];
            if (g < 0 || static_cast<size_t>(g) >= node.gpus.size()) continue;
            if (!known[static_cast<size_t>(g)]) {
                nearest_of[static_cast<size_t>(g)] = nearest_nics(node, g);
                known[static_cast<size_t>(g)] = true;
            }
            const auto& near = nearest_of[static_cast<size_t>(g)];
            if (!near.empty()) slots.push_back({t, p, near, gpu_nic_path(node, g, near.front()).rank()});
        }
    std::stable_sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
        return std::make_tuple(a.nearest.size(), a.task, a.pos) < std::make_tuple(b.nearest.size(), b.task, b.pos);
    });
    std::vector<int> load(node.nics.size(), 0);
    std::vector<std::vector<std::tuple<int, size_t, size_t>>> picks(task_gpus.size());  // (rank, pos, nic)
    for (const Slot& s : slots) {
        size_t best = s.nearest.front();
        for (size_t n : s.nearest)
            if (load[n] < load[best]) best = n;
        ++load[best];
        picks[s.task].emplace_back(s.rank, s.pos, best);
    }
    std::vector<std::vector<std::string>> out(task_gpus.size());
    for (size_t t = 0; t < task_gpus.size(); ++t) {
        std::sort(picks[t].begin(), picks[t].end());
        for (const auto& pk : picks[t]) {
            const std::string& name = node.nics[std::get<2>(pk)].name;
            if (std::find(out[t].begin(), out[t].end(), name) == out[t].end()) out[t].push_back(name);
        }
    }
    return out;
}

std::vector<std::string> usable_node_nics(const Node& node) {
    std::vector<const Nic*> usable;
    for (const auto& n : node.nics)
        if (n.usable()) usable.push_back(&n);
    std::stable_sort(usable.begin(), usable.end(), [](const Nic* a, const Nic* b) { return nic_before(*a, *b); });
    std::vector<std::string> out;
    for (const Nic* n : usable)
        if (std::find(out.begin(), out.end(), n->name) == out.end()) out.push_back(n->name);
    return out;
}

int node_roce_gid_index(const Node& node) {
    int index = -1;
    for (const auto& n : node.nics) {
        if (!n.usable()) continue;
        for (const auto& p : n.ports) {
            if (p.link_layer != "Ethernet" || (!p.state.empty() && p.state != "ACTIVE")) continue;
            if (p.roce_v2_gid_index < 0) continue;
            if (index >= 0 && index != p.roce_v2_gid_index) return -1;
            index = p.roce_v2_gid_index;
        }
    }
    return index;
}

std::vector<NicFallback> nic_fallbacks(const Node& node) {
    std::vector<NicFallback> out;
    // Every NIC for GPU traffic usable: no GPU lost its nearest (and no paths to measure).
    if (std::all_of(node.nics.begin(), node.nics.end(), [](const Nic& n) { return !n.rdma || n.storage || n.usable(); }))
        return out;
    for (const auto& g : node.gpus) {
        // Nearest among the NICs meant for GPU traffic, up or down.
        const std::vector<size_t> nearest = nearest_where(node, g.index, for_gpu_traffic);
        if (nearest.empty()) continue;
        bool any_up = false;
        for (size_t i : nearest) any_up = any_up || node.nics[i].usable();
        if (any_up) continue;
        NicFallback f;
        f.gpu = g.index;
        for (size_t i : nearest) f.lost.push_back(node.nics[i].name);
        f.lost_path = gpu_nic_path(node, g.index, nearest.front()).label();
        std::vector<size_t> instead = nearest_nics(node, g.index);
        for (size_t i : instead) f.fallback.push_back(node.nics[i].name);
        if (!instead.empty()) f.fallback_path = gpu_nic_path(node, g.index, instead.front()).label();
        out.push_back(std::move(f));
    }
    return out;
}

std::string describe(const NicFallback& f) {
    std::string s = "GPU " + std::to_string(f.gpu) + ": nearest NIC" + (f.lost.size() > 1 ? "s " : " ") +
                    join_strings(f.lost, ",") + " (" + f.lost_path + ") " + (f.lost.size() > 1 ? "are" : "is") + " down; ";
    if (f.fallback.empty()) return s + "no usable RDMA NIC left";
    return s + "falling back to " + join_strings(f.fallback, ",") + " (" + f.fallback_path + ")";
}

void add_nic_fallback_warnings(Node& node) {
    for (const auto& f : nic_fallbacks(node)) node.warnings.push_back(describe(f));
}

}  // namespace gputopo
