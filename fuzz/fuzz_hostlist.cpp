// Hostlist expressions: parse, then compressed text, nth and index_of agree.
#include <cstdlib>

#include "fuzz/fuzz_common.hpp"
#include "topo/fabric/hostlist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    gputopo_fuzz::expect_clean([&] {
        gputopo::Hostlist hl = gputopo::Hostlist::parse(gputopo_fuzz::text_of(data, size));
        const uint64_t n = hl.count();
        // A few hosts, not all: a range may hold 2^24 of them.
        for (uint64_t i : {uint64_t{0}, n / 2, n ? n - 1 : 0}) {
            if (i >= n) break;
            const std::string name = hl.nth(i);
            auto at = hl.index_of(name);
            if (!at || *at > i) std::abort();  // found, at its first position
        }
        gputopo::Hostlist again = gputopo::Hostlist::parse(hl.ranged());
        if (again.count() != n) std::abort();
    });
    return 0;
}
