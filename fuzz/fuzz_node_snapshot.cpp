// Node snapshots (the cache's files): read, then what the plugin does with one.
#include "fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gputopo_fuzz::expect_clean([&] {
        gputopo::Node node = gputopo::read_node_snapshot(gputopo_fuzz::text_of(data, size), "fuzz.snap");
        gputopo_fuzz::exercise_node(node);
    });
    return 0;
}
