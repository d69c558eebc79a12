// Intra-node islands: groups of GPUs with full bandwidth between them.
// NVLink/xGMI-connected components (directly or through NVSwitch) first;
// GPUs without such links are grouped by their PCIe switch (PIX/PXB), else
// alone. Pure, deterministic: island ids count up in order of the lowest GPU
// index of each island.
#pragma once

#include <vector>

#include "topo/core/model.hpp"

namespace gputopo {

// island id for every GPU of the node, indexed by GPU index.
std::vector<int> gpu_islands(const Node& node);

}  // namespace gputopo
