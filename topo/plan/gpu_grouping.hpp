// Partitioning an allocation's GPUs into per-task groups, as close as the
// allocation permits (planner rule 2). Pure and deterministic.
//
// Closeness of two GPUs is Path::rank() of gpu_gpu_path() (NV# before PCIe,
// more links before fewer; PIX < PXB < PHB < NODE < SYS). A partition is
// scored, lexicographically, by
//   1. worst: the largest pair rank inside any costed group,
//   2. sum:   the sum of the pair ranks inside all costed groups,
//   3. pci:   the sum of the pairs' PCIe-only ranks (pci_path, ignoring
//             links): a tie-breaker that, among equally linked GPUs (an
//             NVSwitch box), prefers groups on one PCIe switch / NUMA node,
// and among equal scores the canonical partition that is smallest
// lexicographically (groups ordered by their lowest GPU, GPUs ascending)
// wins, so the result does not depend on anything but the inputs.
//
// Up to kExactLimit GPUs the optimum is exact: first the minimal worst rank
// (minimax dynamic programming over subsets of GPUs, the lowest unplaced GPU
// always opening the next group), then the minimal (sum, pci) among
// partitions with that worst, by memoised branch and bound (the heuristic's
// partition as first bound; a lower bound of the rest from each GPU's
// cheapest pairs; memo entries hold exact values or proven lower bounds).
// Measured: < 7 ms for any split of 16 GPUs, < 0.3 ms for 8.
// Above kExactLimit: a deterministic heuristic — the better of two seeds
// (consecutive blocks in (island, NUMA, index) order, and greedy
// nearest-neighbour growth from the lowest free GPU), each improved by
// pairwise swaps between groups until no swap lowers (worst, number of groups
// at worst, sum, pci); at most 64 passes.
#pragma once

#include <vector>

#include "topo/core/model.hpp"

namespace gputopo {

constexpr int kExactLimit = 16;

// `count` groups of `size` GPUs. A kind that is not costed holds GPUs the
// plan leaves unused: its groups count for nothing in the score.
struct GroupKind {
    int size = 1;
    int count = 0;
    bool costed = true;
};

struct GroupScore {
    int worst = 0;
    long long sum = 0;
    long long pci = 0;
    bool operator<(const GroupScore& o) const {
        if (worst != o.worst) return worst < o.worst;
        if (sum != o.sum) return sum < o.sum;
        return pci < o.pci;
    }
    bool operator==(const GroupScore& o) const { return worst == o.worst && sum == o.sum && pci == o.pci; }
};

// Partitions `gpus` (distinct GPU indices, any order) into groups of at most
// two kinds whose sizes times counts add up to gpus.size(). Returns the
// costed groups, each ascending, ordered by their lowest GPU. Kinds with
// count 0 are ignored.
std::vector<std::vector<int>> group_gpus(const Node& node, const std::vector<int>& gpus,
                                         const std::vector<GroupKind>& kinds);

}  // namespace gputopo
