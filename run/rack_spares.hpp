// `gputopo run --spares auto`: spares inside every NVLink domain (issue 32, item 5).
//
// The rule: an island of n nodes of the allocation keeps n / 9 of them idle
// (integer division): 2 of an NVL72 rack's 18 trays -- the 8 of 72 GPUs
// operators keep as spares per rack, leaving the 16 trays per rack that
// NVIDIA's segment guidance uses for large jobs -- 1 of 9 to 17 nodes, none
// below 9. Each island gives its last nodes (the allocation's order); nodes no
// island source names count as one island. A failed node is then replaced by
// a spare of its own rack while the rack has one (node_pool.hpp
// pick_replacement: same island first), so its ranks stay in the NVLink domain.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "topo/fabric/island_map.hpp"

namespace gputopo::launch::job {

inline constexpr int kSparesAuto = -1;  // JobOptions::spares for --spares auto

// Spares the rule keeps in an island of `island_nodes` nodes.
size_t island_spares(size_t island_nodes);

// The spares of `nodes` under the rule, island by island. Throws
// std::invalid_argument (naming --spares auto) when the rule keeps none.
std::vector<std::string> rack_spares(const std::vector<std::string>& nodes, const IslandMap& islands);

}  // namespace gputopo::launch::job
