// plugstack.conf arguments (spank/plugstack_args.cpp): one word per line, and
// the path patterns they carry expanded.
#include "fuzz/fuzz_common.hpp"
#include "spank/plugstack_args.hpp"
#include "step/topology_path.hpp"
#include "topo/core/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<std::string> words = gputopo::split_fields(gputopo_fuzz::text_of(data, size), '\n');
    gputopo_fuzz::expect_clean([&] {
        gputopo::spank::PluginConfig c = gputopo::spank::parse_plugstack_args(words);
        if (!c.topology.empty()) gputopo::step::expand_path(c.topology, "n1", "host1");
    });
    if (words.size() >= 3)
        gputopo_fuzz::expect_clean([&] { gputopo::step::expand_path(words[0], words[1], words[2]); });
    return 0;
}
