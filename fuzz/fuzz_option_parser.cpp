// --gpu-topo=VALUE (step/option_parser.cpp): parse, print, parse back the same.
#include <cstdlib>

#include "fuzz/fuzz_common.hpp"
#include "step/option_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gputopo_fuzz::expect_clean([&] {
        gputopo::spank::Options o = gputopo::spank::parse_gpu_topo(gputopo_fuzz::text_of(data, size));
        if (gputopo::spank::to_string(gputopo::spank::parse_gpu_topo(gputopo::spank::to_string(o))) != gputopo::spank::to_string(o)) std::abort();
    });
    return 0;
}
