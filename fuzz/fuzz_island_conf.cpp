// gputopo.conf, Slurm's topology.conf and topology.yaml (block and flow style,
// topo/fabric): the first byte picks the reader, the rest is the file; the map is
// then sealed and queried.
#include "fuzz/fuzz_common.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/slurm_islands.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string text = gputopo_fuzz::text_of(data + 1, size - 1);
    gputopo_fuzz::expect_clean([&] {
        gputopo::IslandMap map;
        std::vector<std::string> confs;
        if (data[0] % 3 == 2)
            gputopo::parse_slurm_topology_yaml(text, "topology.yaml", map);
        else if (data[0] & 1)
            gputopo::parse_slurm_topology(text, "topology.conf", map);
        else
            gputopo::parse_island_conf(text, "/etc/gputopo/gputopo.conf", map, &confs);
        map.seal();
        for (const char* n : {"n1", "gpu001", "node[1]", ""}) (void)map.find(n);
    });
    return 0;
}
