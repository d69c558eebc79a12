// Parallel layouts (gputopo-launch --layout, gputopo ranks --layout,
// --gpu-topo=island,tp=..) and model descriptions (--model): line 1 is the
// layout, line 2 the model. A layout that parses keeps its rank formula a
// bijection; a small one is placed on nodes no island names and every rank
// must come out once; the model's bytes must be finite.
#include <cmath>
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_common.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text = gputopo_fuzz::text_of(data, size);
    const size_t nl = text.find('\n');
    const std::string layout_text = text.substr(0, nl);
    const std::string model_text = nl == std::string::npos ? std::string() : text.substr(nl + 1);
    gputopo_fuzz::expect_clean([&] {
        using namespace gputopo;
        ParallelLayout l = ParallelLayout::parse(layout_text);
        uint64_t inner = 1;
        for (ParDim d : {ParDim::TP, ParDim::CP, ParDim::EP, ParDim::PP}) inner *= l.size(d);
        const uint64_t world = inner * (l.dp_given() ? l.size(ParDim::DP) : 2);
        l.resolve(world);  // may throw PlanError for large ones
        for (uint64_t r : {uint64_t{0}, world / 2, world - 1})
            if (l.rank_of(l.coords_of(r)) != r) std::abort();
        if (world <= 256) {
            const uint32_t per = world % 8 == 0 ? 8 : 1;
            Hostlist nodes = Hostlist::parse("n[1-" + std::to_string(world / per) + "]");
            IslandMap map;
            LayoutPlacement p = place_layout(nodes, TaskCounts::uniform(nodes.count(), per), map, FabricShape{}, l);
            std::vector<bool> seen(world, false);
            for (uint64_t j = 0; j < p.nodes(); ++j)
                for (uint32_t t = 0; t < p.tasks_on(j); ++t) {
                    uint64_t r = p.rank(j, t);
                    if (r >= world || seen[r]) std::abort();
                    seen[r] = true;
                }
            (void)group_spread(p);
        }
        if (!model_text.empty()) {
            EdgeBytes e = edge_bytes(parse_model_shape(model_text), l);
            for (double x : {e.tp, e.cp, e.ep_pair, e.pp, e.dp})
                if (!std::isfinite(x) || x < 0) std::abort();
        }
    });
    return 0;
}
