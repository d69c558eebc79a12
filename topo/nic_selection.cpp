#include "nic_selection.hpp"

#include <algorithm>
#include <tuple>

#include "distance.hpp"

namespace gputopo {

std::vector<size_t> nearest_nics(const Node& node, int gpu) {
    std::vector<size_t> best;
    int best_rank = 0;
    for (size_t i = 0; i < node.nics.size(); ++i) {
        if (!node.nics[i].usable()) continue;
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

std::vector<std::vector<std::string>> select_nics(const Node& node, const std::vector<std::vector<int>>& task_gpus) {
    struct Slot {
        size_t task, pos;
        std::vector<size_t> nearest;
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
            if (!nearest_of[static_cast<size_t>(g)].empty()) slots.push_back({t, p, nearest_of[static_cast<size_t>(g)]});
        }
    std::stable_sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) {
        return std::make_tuple(a.nearest.size(), a.task, a.pos) < std::make_tuple(b.nearest.size(), b.task, b.pos);
    });
    std::vector<int> load(node.nics.size(), 0);
    std::vector<std::vector<std::pair<size_t, size_t>>> picks(task_gpus.size());  // (pos, nic)
    for (const Slot& s : slots) {
        size_t best = s.nearest.front();
        for (size_t n : s.nearest)
            if (load[n] < load[best]) best = n;
        ++load[best];
        picks[s.task].emplace_back(s.pos, best);
    }
    std::vector<std::vector<std::string>> out(task_gpus.size());
    for (size_t t = 0; t < task_gpus.size(); ++t) {
        std::sort(picks[t].begin(), picks[t].end());
        for (const auto& pk : picks[t]) {
            const std::string& name = node.nics[pk.second].name;
            if (std::find(out[t].begin(), out[t].end(), name) == out[t].end()) out[t].push_back(name);
        }
    }
    return out;
}

std::vector<std::string> usable_node_nics(const Node& node) {
    std::vector<std::string> out;
    for (const auto& n : node.nics)
        if (n.usable() && std::find(out.begin(), out.end(), n.name) == out.end()) out.push_back(n.name);
    return out;
}

}  // namespace gputopo
