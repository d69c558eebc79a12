// --gpu-topo=VALUE (step/option_parser.cpp): parse, print, parse back the same.
#include <cstdlib>

#include "fuzz/fuzz_common.hpp"
#include "step/option_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gputopo_fuzz::expect_clean([&] {
        gputopo::step::Options o = gputopo::step::parse_gpu_topo(gputopo_fuzz::text_of(data, size));
        if (gputopo::step::to_string(gputopo::step::parse_gpu_topo(gputopo::step::to_string(o))) != gputopo::step::to_string(o)) std::abort();
    });
    return 0;
}
