// Placement of a job's parallel groups on the step's nodes: which rank each
// task gets so that the framework's own group formula (ParallelLayout's rank
// formula, Megatron's) puts
//   - every TP group (then every TP*CP block, then TP*CP*EP block) inside one
//     NVLink domain: a node's NVLink island, or a whole island when islands are
//     multi-node NVLink domains (NVL72 racks);
//   - each DP group in as few islands as possible (whole stages inside one
//     island where one fits, stages laid island after island otherwise);
//   - PP neighbours in the same island where the first two leave room.
// Computed by every task alike from what Slurm gives all tasks (node list,
// tasks per node) and the island map: no communication, the same answer
// everywhere, ties broken toward Slurm's order.
//
// How: the GPUs (tasks) are put in a physical sequence and the physical index
// is read as a mixed-radix number tp (fastest), cp, ep, dp, pp; the rank is the
// framework's formula of those coordinates. The physical order does not depend
// on the stated order, so two frameworks' orders place the same groups on the
// same GPUs and only the RANK numbers differ.
// The sequence: for each block size s = tp, tp*cp, tp*cp*ep, tp*cp*ep*dp,
// world (largest first; with a model that favours pipelines, ...*pp before
// *dp), containers in island order (islands by their first node in the node
// list, nodes in node-list order) give whole blocks of s:
//   - s fits a node's NVLink domain: each domain gives the blocks its unused
//     GPUs hold;
//   - s is a stage or the job (larger than tp*cp*ep): each island gives the
//     whole ones it holds, the rest goes down to the smaller sizes;
//   - otherwise (TP/CP/EP blocks larger than a node's domain, or any block when
//     islands are NVLink domains): each island gives its whole blocks, made of
//     whole blocks of the next size down, and its remainder is completed from
//     the remainders of the islands after it (those blocks straddle; the
//     island's whole blocks wait so that every block starts at a multiple of s).
// GPUs no size takes go last. group_spread() and straddle_summary() say which
// groups straddle and why.
//
// Cost per task: O(nodes + tasks) time and memory (4 bytes per task plus a few
// words per node), no host name strings. bench/bench_rank_order.cpp measures
// it at 100k nodes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topo/fabric/hostlist.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/fabric/parallel_layout.hpp"
#include "topo/fabric/rank_order.hpp"

namespace gputopo {

struct FabricShape {
    // GPUs per NVLink domain inside a node (consecutive local positions); 0:
    // the whole node is one domain (HGX/DGX with NVSwitch).
    uint32_t nvlink_gpus = 0;
    // Each island is one NVLink domain (NVL72 rack, multi-node NVLink / IMEX
    // domain): TP/CP/EP groups may span the nodes of one island.
    bool islands_are_nvlink = false;
};

// The NVLink domain as the user states it (plugin nvlink=, launcher
// --nvlink-domain, gputopo ranks --nvlink-domain): "node" (each node one
// domain, the default), "island" (each island is one: NVL72 racks,
// multi-node NVLink) or N (N consecutive GPUs of a node share NVLink).
// Throws ParseError naming the text.
FabricShape parse_nvlink_domain(std::string_view text);

struct EdgeBytes;  // layout_traffic.hpp

class LayoutPlacement {
public:
    const ParallelLayout& layout() const { return layout_; }  // resolved
    uint64_t world() const { return rank_of_slot_.size(); }
    uint64_t nodes() const { return node_island_.size(); }
    uint64_t num_islands() const { return island_first_node_.size(); }
    const FabricShape& shape() const { return shape_; }

    // RANK of the task at `local_position` (planner order, see
    // local_positions()) on node `node_index` (position in the node list).
    // Throws PlanError when out of range.
    uint64_t rank(uint64_t node_index, uint32_t local_position) const;
    // The inverse: (node index, local position) of a rank.
    std::pair<uint64_t, uint32_t> slot_of(uint64_t rank) const;

    uint32_t tasks_on(uint64_t node_index) const {
        return static_cast<uint32_t>(node_first_slot_[node_index + 1] - node_first_slot_[node_index]);
    }
    uint64_t island_of_node(uint64_t node_index) const { return node_island_[node_index]; }
    // The island's first node (index in the node list); its name is the
    // island map's name of that node's island, or the node's own name.
    uint64_t island_first_node(uint64_t island) const { return island_first_node_[island]; }
    bool island_known(uint64_t island) const { return island_map_id_[island] != IslandMap::npos; }
    size_t island_map_id(uint64_t island) const { return island_map_id_[island]; }
    // NVLink domain of a task: an id unique in the step.
    uint64_t domain_of(uint64_t node_index, uint32_t local_position) const;
    uint32_t domain_gpus(uint64_t node_index) const;  // GPUs per NVLink domain on that node
    // The model made whole pipelines go together (pp before dp), see place_layout().
    bool pipelines_first() const { return pipelines_first_; }

    // Island of each rank (index = rank), for the traffic model.
    std::vector<uint32_t> island_of_rank() const;

    // Stages (the first block above tp*cp*ep) were chained island after
    // island, see place_with_order().
    bool stages_chained() const { return stages_chained_; }

    // Blocks moved by refine_by_swaps().
    uint64_t refine_swaps() const { return refine_swaps_; }

    // The TP groups were dealt to the islands again tile by tile, see best_tiled().
    bool tiled() const { return tiled_; }

    friend uint64_t refine_by_swaps(LayoutPlacement&, const EdgeBytes&, uint64_t);
    friend bool best_tiled(LayoutPlacement&, const EdgeBytes&, double&, uint64_t);
    friend LayoutPlacement place_with_order(const Hostlist&, const TaskCounts&, const IslandMap&, const FabricShape&,
                                            ParallelLayout, const ParDim*, bool, bool, bool);
    friend LayoutPlacement place_layout(const Hostlist&, const TaskCounts&, const IslandMap&, const FabricShape&,
                                        ParallelLayout, const EdgeBytes*);

private:
    ParallelLayout layout_;
    FabricShape shape_;
    std::vector<uint64_t> node_first_slot_;   // nodes + 1 entries; slots node-major in node-list order
    std::vector<uint32_t> node_island_;       // per node: island index (step order)
    std::vector<uint64_t> island_first_node_; // per island
    std::vector<size_t> island_map_id_;       // per island: IslandMap id or npos
    std::vector<uint32_t> rank_of_slot_;      // per slot
    bool pipelines_first_ = false;
    bool stages_chained_ = false;
    bool tiled_ = false;
    uint64_t refine_swaps_ = 0;
};

// Resolves the layout against the step's task count and places it. Throws
// PlanError (layout does not match the step, counts do not cover the node
// list, more than kMaxLayoutWorld tasks).
// Without `weights`, stages are laid island after island (DP groups in the
// fewest islands first, as above). With the bytes of a model
// (layout_traffic.hpp; gputopo-launch and gputopo ranks --model), every
// physical order with tp innermost is placed (at most 24; orders differing only
// in dimensions of size 1 once), each with stages whole-in-islands-first,
// chained in step order and chained with the islands packed, each straight
// and serpentine (place_with_order), and the one moving the fewest bytes across islands is
// taken, ties to the default (not chained): e.g. whole pipelines together (pp
// before dp) for models whose pipeline traffic outweighs their gradients, or
// whole DP rings inside islands where CP/EP groups are cheaper to cut; then
// refine_by_swaps() improves it locally. Cost: at most 120 placements and
// traffic counts, O(tasks) each (the packed order: at most 8! orders of up to
// 8 islands, O(islands log islands) above), plus kRefineBudget neighbour
// visits.
LayoutPlacement place_layout(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                             const FabricShape& shape, ParallelLayout layout, const EdgeBytes* weights = nullptr);
// Local refinement (place_layout runs it on the cheapest candidate when it
// has a model): pairs of blocks - TP groups, then TP x CP, then TP x CP x EP
// blocks - drawn by a fixed-seed generator trade their GPUs when that lowers
// the bytes crossing islands (each block's ranks take the other's GPUs in
// coordinate order, so a TP group stays in whatever NVLink domain its GPUs
// are; edges inside a block are unchanged by the swap). The change of a swap
// is computed from the moved ranks' neighbours only. Stops after `budget`
// neighbour visits (work independent of the answer, the same on every task);
// returns the swaps made. Exact: only strict improvements are kept.
uint64_t refine_by_swaps(LayoutPlacement& p, const EdgeBytes& weights, uint64_t budget);
inline constexpr uint64_t kRefineBudget = uint64_t(1) << 21;

// Tiled candidates (place_layout runs them on the cheapest placement when it
// has a model): where `p` keeps every TP group inside one island, the TP
// groups are dealt to the islands again along a path through the grid of
// their (cp, ep, dp, pp) coordinates. The DP ring is cut into kd arcs and the
// pipeline into kp runs of stages (kd * kp at most twice the islands, the
// counts whose tile boundaries alone cut the fewest bytes first); the path
// visits the tiles in serpentine order and each tile's cells in serpentine
// order, for every order of the dimensions; the islands take consecutive
// runs of the path, each as many TP groups as it held, in every order of
// their sizes where they are at most 5, else in step order, largest first,
// and with the two largest at the two ends of the path (whole end stages in
// the largest islands, the smaller ones in blocks between). So an island can hold a block of stages x replicas (half the
// pipeline of a third of the replicas, say) where every candidate above holds
// whole stages or whole pipelines. Each island's TP groups keep their slot
// sets (their NVLink domains), cells in coordinate order taking them in slot
// order. Replaces `p` with the cheapest candidate when it moves fewer bytes
// than `best_cost` (updated) and says so. Work: candidates are evaluated
// while their count times (tasks x dimensions) stays under `budget`.
bool best_tiled(LayoutPlacement& p, const EdgeBytes& weights, double& best_cost, uint64_t budget);
inline constexpr uint64_t kTileBudget = uint64_t(1) << 20;

// chain_stages: the first block size above tp*cp*ep (a stage, or a pipeline
// replica with pp before dp) is not laid whole-in-an-island first with the
// rest last, but chained: islands in order give all their whole tp*cp*ep
// blocks, one after the other, so each island boundary cuts at most one
// stage, and the stage it cuts sits between the islands' own stages (its
// pipeline neighbours on both sides of the boundary) instead of at the end.
// pack_islands (with chain_stages): the islands are chained not in step order
// but packed, each next one the island that closes the open stage exactly
// where one does (else the largest left), so that fewer stages are cut.
// serpentine: the second-outermost dimension of size > 1 (dp under pp, say)
// runs backwards in every other slice of the outermost, so that an island
// holding the end of one stage and the start of the next holds the same dp
// coordinates of both (their PP edges stay inside) instead of opposite ends.
LayoutPlacement place_with_order(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                                 const FabricShape& shape, ParallelLayout layout, const ParDim* physical,
                                 bool chain_stages = false, bool pack_islands = false, bool serpentine = false);

// The RANK of one task: place_layout() then look itself up (the call a
// plugin or launcher task makes). Throws PlanError naming the node when it is
// not in the list.
uint64_t layout_rank(const Hostlist& step_nodes, const TaskCounts& tasks, const IslandMap& map,
                     const FabricShape& shape, const ParallelLayout& layout, std::string_view node,
                     uint32_t local_position, const EdgeBytes* weights = nullptr);

// Island name for messages and tables.
std::string island_name(const LayoutPlacement& p, const Hostlist& step_nodes, const IslandMap& map, uint64_t island);

// Groups of one dimension that are not where the placement wants them: for
// TP, CP and EP groups that span more than one NVLink domain; for DP and PP the
// islands they touch. One entry per dimension of size > 1.
struct GroupSpread {
    ParDim dim = ParDim::TP;
    uint64_t size = 0;             // ranks per group
    uint64_t groups = 0;
    uint64_t straddling = 0;       // TP/CP/EP: groups in more than one NVLink domain; DP/PP: in more than one island
    uint64_t island_spans = 0;     // sum over groups of the islands each touches
    uint64_t min_islands = 0;      // fewest / most islands one group touches
    uint64_t max_islands = 0;
    std::vector<uint64_t> examples;  // first rank of up to `max_examples` straddling groups
    std::string why;               // when straddling > 0 (TP/CP/EP): the reason
};
std::vector<GroupSpread> group_spread(const LayoutPlacement& p, size_t max_examples = 4);

// One line naming the TP/CP/EP groups that straddle NVLink domains and why
// ("tp groups straddle NVLink domains: 2 of 10 (first ranks 64, 72): ..."),
// "" when none does. O(tasks log group size): for one task per step.
std::string straddle_summary(const LayoutPlacement& p);

}  // namespace gputopo
