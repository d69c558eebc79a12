// Bytes per training step that cross island boundaries, for a model the user
// describes and a rank -> island assignment, and a lower bound over every
// placement of the layout on the GPUs the step has per island. Shared by
// bench/bench_island_sim and `gputopo ranks --layout --model`.
//
// The model (bf16, per step; every input is printed by the callers):
//   act  = micro_batch * seq * hidden * 2                 one micro-batch's activations
//   TP   ring edge: 4 all-reduces per layer and micro-batch, 2(T-1)/T of act each,
//        over layers/P layers and M micro-batches (sequence parallel moves the same)
//   CP   ring edge: K and V of the rank's sequence chunk (2 act / (C T)) passed C-1
//        times forward and twice that backward, per layer and micro-batch
//   EP   per pair of a group: dispatch + combine, forward + backward (4 all-to-alls)
//        of the rank's tokens (act / (C T)) times top_k, 1/E of it to each peer,
//        per MoE layer (every layer) and micro-batch
//   PP   edge: activation forward + gradient backward per micro-batch, act / (C T)
//   DP   ring edge: 2(D-1)/D of the rank's gradient shard, params / (T P E) * 2
// A ring of K members (TP, CP, DP, in coordinate order) crosses where
// neighbours sit in different islands; a pipeline where consecutive stages do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topo/fabric/parallel_layout.hpp"

namespace gputopo {

struct ModelShape {
    double params = 0;  // parameters
    uint64_t layers = 1, hidden = 1, seq = 1, micro_batch = 1, microbatches = 1;
    uint64_t top_k = 2;  // MoE experts per token (used when ep > 1)
};

// "params=70e9,layers=80,hidden=8192,seq=4096,micro-batch=1,micro-batches=16[,top-k=2]".
// Throws ParseError naming the text.
ModelShape parse_model_shape(const std::string& text);

struct EdgeBytes {
    double act = 0;
    double tp = 0, cp = 0, ep_pair = 0, pp = 0, dp = 0;  // per ring edge / pair / pipeline edge, per step
};
EdgeBytes edge_bytes(const ModelShape& m, const ParallelLayout& l);  // l resolved

struct CrossBytes {
    double tp = 0, cp = 0, ep = 0, pp = 0, dp = 0;
    double total() const { return tp + cp + ep + pp + dp; }
};

// island_of_rank[r]: the island rank r runs in.
CrossBytes crossing_bytes(const ParallelLayout& l, const std::vector<uint32_t>& island_of_rank, const EdgeBytes& e);

// Per island boundary: bytes leaving each island per step (index = island).
std::vector<double> island_egress(const ParallelLayout& l, const std::vector<uint32_t>& island_of_rank,
                                  const EdgeBytes& e, size_t islands);

// Lower bound over placements with the fewest straddling TP groups (every
// island holds floor(g_i / T) whole TP groups, as every placement worth having
// does), given the GPUs g_i the step has in each island:
//  - TP: groups that cannot sit whole in islands (more groups than
//    sum floor(g_i / T)) cross at least 2 ring edges;
//  - separately (`separate`): island i holds at most cap_i = floor(g_i / T) +
//    g_i mod T ranks of one TP lane (the ranks with one tp coordinate); CP and
//    EP groups beyond those that fit whole in the caps cross >= 2 ring edges
//    (K - 1 pairs for EP), a DP ring spans at least k_min islands (the fewest
//    caps holding D), a pipeline that does not fit crosses once; and, where
//    every island holds whole TP groups, each dimension's packing: the
//    islands' cells mod the group size must fill whole groups together, so
//    the groups they share have at least (islands + groups - parts) pieces
//    (packing_pieces in the .cpp: DP rings of 26 on islands of 16 and 12
//    cells cannot pair up exactly, and cost that);
//  - together (`joint`): CP/EP, DP and PP of one island bounded at once, since
//    keeping one group whole spreads the others (see joint_bound in the .cpp);
//  - by projections (`projection`): an island's cells of one lane, a set of
//    (x, d, p), touch R DP rings, Q pipelines and G CP/EP groups with
//    cells^2 <= R Q G (Loomis-Whitney); every ring/group it holds part of
//    crosses at it, a pipeline in k islands k - 1 times (projection_bound in
//    the .cpp);
//  - split (`split`): CP + EP and DP + PP bounded apart, their edges being
//    different ones: DP + PP by the larger of their separate terms and the
//    joint bound without CP/EP; CP + EP by the larger of their separate terms
//    and the block term (`blocks`): an island whose cells of a lane are not a
//    multiple of cp*ep holds part of a cp x ep block, whose cut it pays half
//    of (split_bound in the .cpp);
//  - by cuts (`cut`): a lane crosses half the sum over islands of the edge
//    boundary of the island's cells; each island's boundary is bounded below
//    by its cell count alone, over the product of the cp x ep block, the DP
//    ring and the PP path, slice by slice (cut_bound in the .cpp); with two
//    islands this is close to the optimum;
//  - by stages (`stages`): where no island holds a whole stage (or a whole
//    pipeline), every stage is cut inside, at least as cheaply as its cells
//    split into parts no larger than the largest island allows; the PP (DP)
//    edges added apart (stage_bound in the .cpp);
//  - by ends (`ends`): the stages coupled along the pipeline, each island's
//    cells stage by stage a dynamic programme, the stages' sizes priced by
//    Lagrange multipliers: the other terms let every island sit at a
//    pipeline end, and a pipeline has two (ends_bound in the .cpp);
//  the largest of the seven is used. Every term is a proof written beside its
//  code; tests/unit/test_layout_placement.cpp checks the bound against
//  exhaustive search over small layouts.
struct BoundBytes {
    CrossBytes parts;     // each dimension's separate bound
    double separate = 0;  // parts.cp + parts.ep + parts.dp + parts.pp
    double joint = 0;     // CP + EP + DP + PP bounded together
    double projection = 0;  // CP + EP + DP + PP by the islands' projections
    double blocks = 0;      // CP + EP: cp x ep blocks that islands must cut
    double split = 0;       // max(parts.cp + parts.ep, blocks) + max(parts.dp + parts.pp, joint without CP/EP)
    double cut = 0;         // CP + EP + DP + PP: each island's edge boundary from its size
    double stages = 0;      // CP + EP + DP + PP: every stage (or pipeline) cut where no island holds one
    double ends = 0;        // CP + EP + DP + PP: stages coupled along the pipeline, its two ends priced
    double total() const;  // parts.tp + max(separate, joint, projection, split, cut, stages, ends)
};
// The slice model behind the `ends` term, for a caller that solves it
// exactly (bench_island_sim hands it to a MIP solver): psi[c], c = 0..S (S =
// cp*ep*dp, the cells of one stage of one TP lane), a lower bound of the
// weighted CP, EP and DP edges of one stage that join c of its cells to the
// other S - c. Where every island holds whole TP groups (n_i cells in every
// lane), a placement's bytes are at least T/2 min sum_i [sum_p psi(c_ip) +
// pp * sum_p |c_ip - c_i,p+1|] over integer c_ip >= 0 with sum_p c_ip = n_i
// and sum_i c_ip = S (ends_bound in the .cpp says why). Empty where the
// cp*ep block is too large for the bound's work limits.
std::vector<double> stage_cut_bound(const ParallelLayout& l, const EdgeBytes& e);

// cut_work: the steps the cut bound's exact knapsacks may take (past it, their
// convex relaxation); tests pass 0 to check the relaxation.
BoundBytes lower_bound_bytes(const ParallelLayout& l, const std::vector<uint64_t>& gpus_per_island,
                             const EdgeBytes& e, double cut_work = 2e8);

}  // namespace gputopo
