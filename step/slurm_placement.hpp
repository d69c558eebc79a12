// How Slurm orders a step's tasks across nodes, as slurm.conf and the job set it
// (Slurm's source, 23.11-26.05):
//  - TopologyParam=BlockAsNodeRank (topology/block, 23.11+): the node table is
//    ordered block by block (topology_block.c topology_p_generate_node_ranking,
//    slurmctld read_config.c _reorder_nodes_by_rank), so tasks go block by
//    block on every release;
//  - 26.05 places tasks in topology order by default (cons_tres job_test.c:
//    topology_g_get_rank, blocks by index); SelectTypeParameters=
//    CR_NO_DIST_TOPO_BLOCK turns that off (back to node order);
//  - sbatch --segment=S (23.11+, topology/block): the job's nodes come in
//    segments of S, each inside one base block; the job sees
//    SLURM_JOB_SEGMENT_SIZE=S (env.c). --spread-segments puts each segment in a
//    base block of its own, --consolidate-segments all in one higher-level
//    block: neither changes the order of the nodes, only which ones.
// Pure parsing here; read_slurm_placement reads the slurm.conf file once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "step/step_inputs.hpp"

namespace gputopo::step {

struct SlurmPlacement {
    bool block_as_node_rank = false;  // TopologyParam has BlockAsNodeRank
    bool no_dist_topo_block = false;  // SelectTypeParameters has CR_NO_DIST_TOPO_BLOCK
    uint64_t segment_size = 0;        // SLURM_JOB_SEGMENT_SIZE (1..1<<20), 0 none
    // Whether Slurm places tasks block by block (topology order): BlockAsNodeRank
    // on any release, else a 26.05+ Slurm (`topology_order_release`) without
    // CR_NO_DIST_TOPO_BLOCK.
    bool topology_order(bool topology_order_release) const {
        return block_as_node_rank || (topology_order_release && !no_dist_topo_block);
    }
};

// From slurm.conf's text (TopologyParam=, SelectTypeParameters=; comma lists,
// case-insensitive, as Slurm matches them) and the job's environment
// (SLURM_JOB_SEGMENT_SIZE). Never throws: unreadable lines and a segment size
// that is not a number of 1 to 1<<20 count as absent.
SlurmPlacement parse_slurm_placement(std::string_view slurm_conf, const Getenv& job_env);

// The same with the slurm.conf this process's Slurm uses (SLURM_CONF, else the
// default; `process_env`: the process environment); a missing file reads as
// an empty one.
SlurmPlacement read_slurm_placement(const Getenv& process_env, const Getenv& job_env);

// Whether this build's Slurm and slurm.conf place tasks in topology order:
// what callers that now ask built_topology_order() should ask.
bool slurm_places_by_topology(const Getenv& process_env);

}  // namespace gputopo::step
