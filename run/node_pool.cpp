#include "run/node_pool.hpp"

#include "run/rack_spares.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace gputopo::launch::job {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

// The allocation's nodes grouped by island id (npos last), each group in Slurm's order.
std::map<size_t, std::vector<std::string>> by_island(const std::vector<std::string>& nodes, const IslandMap& islands) {
    std::map<size_t, std::vector<std::string>> groups;
    for (const auto& n : nodes) groups[islands.find(n)].push_back(n);
    return groups;
}

// Sort key of a spare for `failed`: same island 0, else 1 + |id difference|, unknown last.
size_t island_distance(size_t failed_island, size_t spare_island) {
    if (spare_island == IslandMap::npos) return static_cast<size_t>(-1);
    if (failed_island == IslandMap::npos) return static_cast<size_t>(-2);
    if (spare_island == failed_island) return 0;
    return 1 + (spare_island > failed_island ? spare_island - failed_island : failed_island - spare_island);
}

}  // namespace

namespace {

// `spares` nodes, one per island in turn: the island with the most nodes still
// unpicked (first by id on ties) gives its last node.
std::vector<std::string> spread_spares(const std::vector<std::string>& nodes, int spares, const IslandMap& islands) {
    auto groups = by_island(nodes, islands);
    std::vector<std::string> picked;
    while (picked.size() < static_cast<size_t>(spares)) {
        std::vector<std::string>* best = nullptr;
        for (auto& [id, g] : groups)
            if (!g.empty() && (!best || g.size() > best->size())) best = &g;
        picked.push_back(best->back());
        best->pop_back();
    }
    return picked;
}

NodePool pool_of(const std::vector<std::string>& nodes, const std::vector<std::string>& picked, const IslandMap& islands) {
    NodePool pool;
    for (const auto& n : nodes) (contains(picked, n) ? pool.spares : pool.slots).push_back(n);
    // Slots island by island (islands in the order the allocation first names them), so
    // that ranks in slot order are island-ordered; a replacement keeps its slot after that.
    std::map<size_t, size_t> first_seen;
    for (size_t i = 0; i < nodes.size(); ++i) first_seen.emplace(islands.find(nodes[i]), i);
    std::map<std::string, size_t> position;
    for (size_t i = 0; i < nodes.size(); ++i) position.emplace(nodes[i], i);
    auto key = [&](const std::string& n) {
        const size_t k = islands.find(n);
        return k == IslandMap::npos ? position[n] : first_seen[k];
    };
    std::stable_sort(pool.slots.begin(), pool.slots.end(),
                     [&](const std::string& a, const std::string& b) { return key(a) < key(b); });
    return pool;
}

}  // namespace

NodePool split_allocation(const std::vector<std::string>& nodes, int spares, const IslandMap& islands) {
    if (spares == kSparesAuto) return pool_of(nodes, rack_spares(nodes, islands), islands);
    if (spares < 0 || static_cast<size_t>(spares) >= nodes.size())
        throw std::invalid_argument("--spares " + std::to_string(spares) + ": the allocation has " +
                                    std::to_string(nodes.size()) + " node(s); expected 0 to " +
                                    std::to_string(nodes.empty() ? 0 : nodes.size() - 1));
    return pool_of(nodes, spread_spares(nodes, spares, islands), islands);
}

int pick_replacement(const NodePool& pool, const std::string& failed, const IslandMap& islands) {
    const size_t fi = islands.find(failed);
    int best = -1;
    size_t best_d = 0;
    for (size_t i = 0; i < pool.spares.size(); ++i) {
        size_t d = island_distance(fi, islands.find(pool.spares[i]));
        if (best < 0 || d < best_d) {
            best = static_cast<int>(i);
            best_d = d;
        }
    }
    return best;
}

const char* restart_action_name(RestartAction a) {
    switch (a) {
        case RestartAction::Stop: return "stop";
        case RestartAction::Relaunch: return "relaunch";
        case RestartAction::Replace: return "replace";
        case RestartAction::Shrink: return "shrink";
        case RestartAction::Requeue: return "requeue";
    }
    return "stop";
}

bool restartable(FailureClass c) {
    switch (c) {
        case FailureClass::Failed:
        case FailureClass::GpuFault:
        case FailureClass::NodeFault:
        case FailureClass::PeerLost: return true;
        default: return false;
    }
}

RestartDecision decide_restart(const NodePool& pool, const Classification& c, const std::string& failed_node,
                               int restarts, const RestartPolicy& policy, const IslandMap& islands) {
    RestartDecision d;
    d.failed_node = failed_node;
    const std::string what = std::string(failure_class_name(c.cls)) + (c.evidence.empty() ? "" : " (" + c.evidence + ")");
    if (!restartable(c.cls)) {
        d.reason = c.cls == FailureClass::Success ? "the step succeeded" : what + " is not restarted";
        return d;
    }
    if (restarts >= policy.max_restarts) {
        d.reason = what + ": --max-restarts " + std::to_string(policy.max_restarts) + " spent";
        return d;
    }
    if (failed_node.empty() || !contains(pool.slots, failed_node)) {
        d.action = RestartAction::Relaunch;
        d.reason = what + ": no node of the step to blame; relaunching on the same nodes";
        return d;
    }
    int r = pick_replacement(pool, failed_node, islands);
    if (r >= 0) {
        d.action = RestartAction::Replace;
        d.replacement = pool.spares[static_cast<size_t>(r)];
        size_t fi = islands.find(failed_node);
        d.same_island = fi != IslandMap::npos && fi == islands.find(d.replacement);
        d.reason = what + " on " + failed_node + ": spare " + d.replacement + " takes its ranks (" +
                   (d.same_island ? "same island" : "nearest island") + ")";
        return d;
    }
    const int min_nodes = policy.min_nodes > 0 ? policy.min_nodes : static_cast<int>(pool.slots.size());
    if (static_cast<int>(pool.slots.size()) - 1 >= min_nodes) {
        d.action = RestartAction::Shrink;
        d.reason = what + " on " + failed_node + ": no spare left; shrinking to " +
                   std::to_string(pool.slots.size() - 1) + " node(s) (--min-nodes " + std::to_string(min_nodes) + ")";
        return d;
    }
    d.action = RestartAction::Requeue;
    d.reason = what + " on " + failed_node + ": no spare left and " +
               (policy.min_nodes > 0 ? "--min-nodes " + std::to_string(min_nodes) + " allows no shrinking"
                                     : std::string("no --min-nodes (shrinking not allowed)")) +
               "; requeueing the job without " + failed_node;
    return d;
}

void apply_decision(NodePool& pool, const RestartDecision& d) {
    if (d.action == RestartAction::Replace) {
        std::replace(pool.slots.begin(), pool.slots.end(), d.failed_node, d.replacement);
        pool.spares.erase(std::find(pool.spares.begin(), pool.spares.end(), d.replacement));
    } else if (d.action == RestartAction::Shrink) {
        pool.slots.erase(std::find(pool.slots.begin(), pool.slots.end(), d.failed_node));
    }
    if ((d.action == RestartAction::Replace || d.action == RestartAction::Shrink || d.action == RestartAction::Requeue) &&
        !contains(pool.excluded, d.failed_node))
        pool.excluded.push_back(d.failed_node);
}

std::string task_nodelist(const std::vector<std::string>& slots, int tasks_per_node) {
    std::string out;
    for (const auto& n : slots)
        for (int t = 0; t < tasks_per_node; ++t) out += (out.empty() ? "" : ",") + n;
    return out;
}

}  // namespace gputopo::launch::job
