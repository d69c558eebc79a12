#include "run/rack_spares.hpp"

#include <map>
#include <stdexcept>

namespace gputopo::launch::job {

namespace {
constexpr size_t kNodesPerSpare = 9;  // 2 of 18 NVL72 trays
}

size_t island_spares(size_t island_nodes) { return island_nodes / kNodesPerSpare; }

std::vector<std::string> rack_spares(const std::vector<std::string>& nodes, const IslandMap& islands) {
    std::map<size_t, std::vector<std::string>> groups;
    for (const auto& n : nodes) groups[islands.find(n)].push_back(n);
    std::vector<std::string> picked;
    for (const auto& [id, g] : groups)
        for (size_t k = island_spares(g.size()), i = 0; i < k; ++i) picked.push_back(g[g.size() - 1 - i]);
    if (picked.empty())
        throw std::invalid_argument("--spares auto: no island of the allocation has " + std::to_string(kNodesPerSpare) +
                                    " nodes or more (the rule keeps 1 spare per " + std::to_string(kNodesPerSpare) +
                                    " nodes of an island, 2 of an NVL72 rack's 18 trays); expected --spares N");
    return picked;
}

}  // namespace gputopo::launch::job
