// NCCL/RCCL topology XML reader -> node -> snapshot, plans, NCCL writer.
#include "fuzz/fuzz_common.hpp"
#include "topo/sources/nccl_xml_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gputopo_fuzz::expect_clean([&] {
        gputopo::Node node = gputopo::read_nccl_xml_buffer(gputopo_fuzz::text_of(data, size), "fuzz.xml");
        gputopo_fuzz::exercise_node(node);
    });
    return 0;
}
