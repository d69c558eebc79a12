// How Slurm orders a step's tasks across nodes, as slurm.conf and the job set it
// (Slurm's source, 23.11-26.05):
//  - TopologyParam=BlockAsNodeRank (topology/block, 25.11+: Slurm's NEWS for
//    25.11): the node table is ordered block by block, so tasks go block by
//    block. Earlier releases ignore the word: on 24.11 daemons with it
//    (t_block_rank.sh) tasks went in node-list order;
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

// Slurm releases as SLURM_VERSION_NUMBER spells them (0xMMmmpp).
inline constexpr unsigned long kSlurm25_11 = 0x190b00UL, kSlurm26_05 = 0x1a0500UL;

struct SlurmPlacement {
    bool block_as_node_rank = false;  // TopologyParam has BlockAsNodeRank
    bool no_dist_topo_block = false;  // SelectTypeParameters has CR_NO_DIST_TOPO_BLOCK
    uint64_t segment_size = 0;        // SLURM_JOB_SEGMENT_SIZE (1..1<<20), 0 none
    // Whether Slurm `release` (SLURM_VERSION_NUMBER) places tasks block by block
    // (topology order): BlockAsNodeRank on 25.11+, or 26.05+ without
    // CR_NO_DIST_TOPO_BLOCK.
    bool topology_order(unsigned long release) const {
        return (block_as_node_rank && release >= kSlurm25_11) || (release >= kSlurm26_05 && !no_dist_topo_block);
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

// Whether this build's Slurm and slurm.conf place tasks in topology order.
bool slurm_places_by_topology(const Getenv& process_env);

}  // namespace gputopo::step
