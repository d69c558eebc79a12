// hwloc XML reader (libxml2 checks, then libhwloc's import) -> node -> snapshot, plans, NCCL writer.
#include "fuzz/fuzz_common.hpp"
#include "topo/sources/hwloc_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gputopo_fuzz::expect_clean([&] {
        gputopo::Node node = gputopo::read_hwloc_xml_buffer(gputopo_fuzz::text_of(data, size), "fuzz.xml");
        gputopo_fuzz::exercise_node(node);
    });
    return 0;
}
