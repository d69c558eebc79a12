#include "topo/fabric/rank_order.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"

namespace gputopo {

namespace {

constexpr uint64_t kUnset = ~uint64_t{0};

[[noreturn]] void bad_counts(std::string_view text, const std::string& why) {
    throw ParseError("bad tasks per node '" + std::string(text) + "': " + why +
                     " (expected counts like '4(x3),2', as in SLURM_STEP_TASKS_PER_NODE)");
}

uint64_t parse_number(std::string_view text, std::string_view whole, const char* what) {
    if (text.empty()) bad_counts(whole, std::string("missing ") + what);
    if (text.size() > 9) bad_counts(whole, std::string(what) + " '" + std::string(text) + "' is too large");
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9') bad_counts(whole, "'" + std::string(text) + "' is not a number");
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
}

// Walks the task counts alongside the node list.
class CountCursor {
public:
    explicit CountCursor(const TaskCounts& c) : runs_(c.runs()) {}
    uint32_t next() {
        while (run_ < runs_.size() && used_ == runs_[run_].second) {
            ++run_;
            used_ = 0;
        }
        if (run_ >= runs_.size()) return 0;
        ++used_;
        return runs_[run_].first;
    }

private:
    const std::vector<std::pair<uint32_t, uint64_t>>& runs_;
    size_t run_ = 0;
    uint64_t used_ = 0;
};

void check_cover(const Hostlist& nodes, const TaskCounts& tasks) {
    if (nodes.count() != tasks.nodes())
        throw PlanError("the step's node list '" + (nodes.count() <= 64 ? nodes.ranged() : std::string("...")) +
                        "' has " + std::to_string(nodes.count()) + " nodes but the tasks per node cover " +
                        std::to_string(tasks.nodes()) + " (expected one count per node)");
}

}  // namespace

TaskCounts TaskCounts::parse(std::string_view text) {
    TaskCounts tc;
    size_t pos = 0;
    std::string_view t = text;
    while (!t.empty() && (t.back() == ' ' || t.back() == '\n')) t.remove_suffix(1);
    if (t.empty()) bad_counts(text, "empty");
    while (pos <= t.size()) {
        size_t comma = t.find(',', pos);
        std::string_view item = t.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        uint64_t repeat = 1;
        size_t paren = item.find('(');
        std::string_view count = item.substr(0, paren);
        if (paren != std::string_view::npos) {
            if (item.size() < paren + 4 || item[paren + 1] != 'x' || item.back() != ')')
                bad_counts(text, "'" + std::string(item) + "' is not N or N(xM)");
            repeat = parse_number(item.substr(paren + 2, item.size() - paren - 3), text, "repeat count");
            if (repeat == 0) bad_counts(text, "repeat count 0 in '" + std::string(item) + "'");
        }
        uint64_t n = parse_number(count, text, "task count");
        tc.runs_.emplace_back(static_cast<uint32_t>(n), repeat);
        tc.nodes_ += repeat;
        tc.tasks_ += n * repeat;
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    return tc;
}

TaskCounts TaskCounts::uniform(uint64_t nodes, uint32_t tasks_per_node) {
    TaskCounts tc;
    if (nodes) tc.runs_.emplace_back(tasks_per_node, nodes);
    tc.nodes_ = nodes;
    tc.tasks_ = nodes * tasks_per_node;
    return tc;
}

uint32_t TaskCounts::at(uint64_t node) const {
    for (const auto& [n, repeat] : runs_) {
        if (node < repeat) return n;
        node -= repeat;
    }
    throw std::out_of_range("node " + std::to_string(node) + " past the tasks per node list");
}

IslandPlacement place_task(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                           std::string_view node, uint32_t local_position) {
    check_cover(step_nodes, tasks);
    std::optional<uint64_t> me = step_nodes.index_of(node);
    if (!me)
        throw PlanError("node '" + std::string(node) + "' is not in the step's node list" +
                        (step_nodes.count() <= 64 ? " '" + step_nodes.ranged() + "'" : std::string()));
    const size_t my_island = map.find(node);

    // Per known island: first node position and task count in this step.
    std::vector<uint64_t> first(map.size(), kUnset), size(map.size(), 0), nodes(map.size(), 0);
    uint64_t first_me = my_island == IslandMap::npos ? *me : kUnset;
    uint64_t unknown_islands = 0, unknown_before = 0, unknown_tasks_before = 0;
    uint64_t before_me_in_island = 0, my_tasks = 0;
    uint64_t i = 0;
    CountCursor counts(tasks);
    step_nodes.for_each_host([&](size_t, const HostRange& r, uint64_t v) {
        uint32_t t = counts.next();
        size_t k = map.find(r, v);
        if (i == *me) my_tasks = t;
        if (k == IslandMap::npos) {
            ++unknown_islands;
            if (first_me == kUnset || i < first_me) {
                // islands that start before mine (mine is not yet seen, or it is
                // me and I am unknown: then first_me == *me)
                if (i != *me) {
                    ++unknown_before;
                    unknown_tasks_before += t;
                }
            }
        } else {
            if (first[k] == kUnset) first[k] = i;
            size[k] += t;
            ++nodes[k];
            if (k == my_island) {
                if (first_me == kUnset) first_me = i;
                if (i < *me) before_me_in_island += t;
            }
        }
        ++i;
    });
    if (local_position >= my_tasks)
        throw PlanError("local task position " + std::to_string(local_position) + " on node '" + std::string(node) +
                        "', which runs " + std::to_string(my_tasks) + " task(s) of the step");

    IslandPlacement p;
    p.world = tasks.tasks();
    p.island_index = unknown_before;
    uint64_t base = unknown_tasks_before;
    uint64_t known_islands = 0;
    for (size_t k = 0; k < map.size(); ++k) {
        if (first[k] == kUnset) continue;
        ++known_islands;
        if (first[k] < first_me) {
            ++p.island_index;
            base += size[k];
        }
    }
    p.num_islands = known_islands + unknown_islands;
    if (my_island == IslandMap::npos) {
        p.island = std::string(node);
        p.island_known = false;
        p.island_size = my_tasks;
        p.island_nodes = 1;
        p.island_rank = local_position;
    } else {
        p.island = map.island(my_island).name;
        p.island_known = true;
        p.source = *map.source_of(node);
        p.island_size = size[my_island];
        p.island_nodes = nodes[my_island];
        p.island_rank = before_me_in_island + local_position;
    }
    p.rank = base + p.island_rank;
    return p;
}

std::vector<NodePlacement> place_step(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map) {
    check_cover(step_nodes, tasks);
    const uint64_t n = step_nodes.count();
    std::vector<size_t> island(static_cast<size_t>(n));
    std::vector<uint32_t> count(static_cast<size_t>(n));
    uint64_t i = 0;
    CountCursor counts(tasks);
    step_nodes.for_each_host([&](size_t, const HostRange& r, uint64_t v) {
        count[i] = counts.next();
        island[i] = map.find(r, v);
        ++i;
    });
    // Group key per node: its island's first node (unknown nodes: themselves).
    std::vector<uint64_t> first(map.size(), kUnset);
    std::vector<uint64_t> key(static_cast<size_t>(n));
    for (uint64_t j = 0; j < n; ++j) {
        size_t k = island[j];
        if (k == IslandMap::npos) {
            key[j] = j;
        } else {
            if (first[k] == kUnset) first[k] = j;
            key[j] = first[k];
        }
    }
    std::vector<uint64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) { return key[a] < key[b]; });

    std::vector<NodePlacement> out;
    out.reserve(static_cast<size_t>(n));
    uint64_t rank = 0, island_index = 0;
    size_t group_start = 0;
    for (size_t pos = 0; pos < order.size(); ++pos) {
        uint64_t j = order[pos];
        bool new_group = pos == 0 || key[order[pos - 1]] != key[j];
        if (new_group && pos > 0) {
            ++island_index;
            group_start = out.size();
        }
        NodePlacement np;
        np.node_index = j;
        np.node = step_nodes.nth(j);
        np.island_known = island[j] != IslandMap::npos;
        np.island = np.island_known ? map.island(island[j]).name : np.node;
        np.island_index = island_index;
        np.tasks = count[j];
        np.first_rank = rank;
        np.first_island_rank = new_group ? 0 : out.back().first_island_rank + out.back().tasks;
        rank += count[j];
        out.push_back(std::move(np));
        // Fill the island size once the group is complete.
        bool last = pos + 1 == order.size() || key[order[pos + 1]] != key[j];
        if (last) {
            uint64_t sz = out.back().first_island_rank + out.back().tasks;
            for (size_t q = group_start; q < out.size(); ++q) out[q].island_size = sz;
        }
    }
    return out;
}

std::vector<uint32_t> local_positions(const Plan& plan) {
    std::vector<uint32_t> order(plan.tasks.size());
    std::iota(order.begin(), order.end(), 0u);
    auto island_of = [&](uint32_t t) {
        int isl = plan.tasks[t].island;
        return isl < 0 ? std::numeric_limits<int>::max() : isl;
    };
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return island_of(a) < island_of(b); });
    std::vector<uint32_t> position(plan.tasks.size());
    for (uint32_t p = 0; p < order.size(); ++p) position[order[p]] = p;
    return position;
}

std::vector<std::pair<std::string, std::string>> island_env(const IslandPlacement& p) {
    return {
        {env::kIsland, p.island},
        {env::kIslandRank, std::to_string(p.island_rank)},
        {env::kIslandSize, std::to_string(p.island_size)},
        {env::kNumIslands, std::to_string(p.num_islands)},
        {env::kRank, std::to_string(p.rank)},
    };
}

}  // namespace gputopo
