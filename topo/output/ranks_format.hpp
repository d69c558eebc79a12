// Rendering `gputopo ranks` (cli/cmd_ranks.cpp computes, these write): the
// island-ordered ranks of a --gpu-topo=island step (topo/fabric/rank_order.hpp),
// one node's tasks with their variables, and a --layout placement
// (topo/fabric/layout_placement.hpp) with the groups that straddle and, with a
// model, the bytes per step crossing islands (topo/fabric/layout_traffic.hpp);
// each as the table people read or the JSON scripts read (schema_version 1;
// field names are an interface). Pure: they write to `out`, never throw on
// well-formed inputs.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"
#include "topo/fabric/rank_order.hpp"

namespace gputopo {

// The step's nodes in island rank order (place_step's table).
void write_island_ranks(std::ostream& out, const std::vector<NodePlacement>& table, const TaskCounts& counts,
                        const Hostlist& nodes, const std::string& sources, bool json);
// One node's tasks (`tasks[t]`: place_task for local position t).
void write_island_ranks_node(std::ostream& out, const std::string& node, const std::vector<IslandPlacement>& tasks,
                             bool json);

// The bytes a model moves per training step (--model), for the layout views.
struct LayoutBytes {
    CrossBytes cross;
    BoundBytes bound;
    std::vector<double> egress;  // per island
    std::vector<uint64_t> gpus;  // per island
};

// A --layout placement and what the views print beside it.
struct LayoutView {
    const LayoutPlacement& placement;
    const Hostlist& nodes;
    const IslandMap& map;
    const std::string& sources;              // where the islands came from
    const FabricShape& shape;                // the NVLink domain
    const std::vector<GroupSpread>& spread;  // group_spread(placement)
    const std::optional<LayoutBytes>& bytes; // with --model
};

// Every node's ranks, the groups, and the bytes.
void write_layout_ranks(std::ostream& out, const LayoutView& v, bool json);
// One node's tasks (`node`: its name; `j`: its index in the step's nodes).
void write_layout_node(std::ostream& out, const LayoutView& v, const std::string& node, uint64_t j, bool json);

}  // namespace gputopo
