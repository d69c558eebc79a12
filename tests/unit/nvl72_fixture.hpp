// A real NVL72 block topology for the `gputopo run` tests: 4 GB200 NVL72 racks
// of 18 trays (Azure CycleCloud's block topology.conf; nodes interleaved:
// hpc-1 in block 1, hpc-2 in block 2 ...), and its node names.
#pragma once

#include <string>
#include <vector>

#include "topo/fabric/island_map.hpp"
#include "topo/fabric/island_sources.hpp"

namespace gputopo_test {

inline gputopo::IslandMap nvl72_racks() {
    gputopo::IslandMap m;
    gputopo::read_slurm_topology(std::string(GPUTOPO_SOURCE_DIR) +
                            "/tests/fixtures/topologies/slurm/azure-cyclecloud_gb200-nvl72_4blocks-x18_block-topology.conf",
                        m);
    return m;
}

// hpcbench-hpc-FROM .. hpcbench-hpc-TO
inline std::vector<std::string> nvl72_hosts(int from, int to) {
    std::vector<std::string> v;
    for (int i = from; i <= to; ++i) v.push_back("hpcbench-hpc-" + std::to_string(i));
    return v;
}

}  // namespace gputopo_test
