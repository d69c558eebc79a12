// Which node holds rank 0, and each node's place in Slurm's rank order.
//
// Slurm fills a step's nodes with consecutive ranks (block distribution) in
// node-list order up to 25.11; 26.05 follows the topology order when a
// topology plugin is configured (slurm.conf(5): blocks or leaf switches one
// after another; seen: blocks b1=n[2,4], b2=n[1,3] put ranks 0-1 on n2), while
// SLURM_NODEID and the node list stay in name order. No variable names the
// node of rank 0, but each node knows the lowest rank it holds: of the two
// orders, the one whose ranks before this node add up to it is Slurm's. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "step/slurm_placement.hpp"
#include "step/step_inputs.hpp"
#include "topo/fabric/hostlist.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/fabric/rank_order.hpp"

namespace gputopo::step {

struct SlurmNodeOrder {
    std::string rank0_node;  // the node that holds rank 0; "" unknown
    long node_rank = -1;     // this node's position in rank order (GROUP_RANK, NODE_RANK); -1 unknown
    std::string order;       // "node list" or "topology"; "" unknown
};

// `nodes`: the step's node list; `counts`: tasks per node, in its order; `me`:
// this node's index there (SLURM_NODEID); `first_rank`: the lowest rank on this
// node; `island_of`: each node's island in Slurm's topology (IslandMap::npos:
// none), in node-list order, empty when there is no topology; `prefer_topology`:
// where both orders fit this node, the topology's (Slurm 26.05+).
// Topology order: islands by id (Slurm's file order), nodes of no island last,
// node-list order within. At most 1<<20 nodes (else unknown).
SlurmNodeOrder slurm_node_order(const Hostlist& nodes, const TaskCounts& counts, uint64_t me, uint64_t first_rank,
                                const std::vector<size_t>& island_of, bool prefer_topology);

// The same from the step's environment (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE,
// SLURM_NODEID, each with the job's as fallback) and the lowest rank on this node;
// `topology`: Slurm's topology as islands (null: none). Unknown (never throws)
// when a variable is missing or malformed.
SlurmNodeOrder step_node_order(const Getenv& env, uint64_t first_rank, const IslandMap* topology,
                               bool prefer_topology);

// Island mode where Slurm already places tasks island by island: Slurm places
// them in topology order (step/slurm_placement.hpp: 26.05 without
// CR_NO_DIST_TOPO_BLOCK, or TopologyParam=BlockAsNodeRank on 25.11+), `order` is what
// step_node_order found (its order "topology", from Slurm's topology
// `topology`, or "node list" where that list goes block by block, as
// BlockAsNodeRank writes it), and in that order the nodes of each island of `islands` (the
// map island mode uses; a node it does not name is an island of its own) are
// consecutive. Then island order would only reshuffle ranks Slurm grouped
// already: RANK stays SLURM_PROCID (issue 32). With segments
// (SLURM_JOB_SEGMENT_SIZE=S) Slurm's ranks are kept too where island order
// would split a segment: in Slurm's order each base block's nodes come in
// segments of S, and a segment that spans two islands of `islands` would be
// torn apart by island ranks. `env`: the job's environment; slurm.conf is the
// one this process's Slurm uses (SLURM_CONF in the process environment).
bool slurm_order_keeps_islands(const Getenv& env, const SlurmNodeOrder& order, const IslandMap& topology,
                               const IslandMap& islands);
// The same with `placement` given (pure; the tests' entry).
bool slurm_order_keeps_islands(const SlurmPlacement& placement, unsigned long release, const Getenv& env,
                               const SlurmNodeOrder& order, const IslandMap& topology, const IslandMap& islands);

// The lowest rank on this task's node under block distribution:
// SLURM_PROCID - SLURM_LOCALID; nullopt when either is missing or not a
// number of at most 9 digits, or the local id exceeds the rank.
std::optional<uint64_t> node_first_rank(const Getenv& env);

// The Slurm release this build is for, as SLURM_VERSION_NUMBER (0: unknown).
unsigned long built_slurm_release();

}  // namespace gputopo::step
