// Shared by the libFuzzer targets (one per fuzz_*.cpp, built by `make fuzz`).
// A target feeds its input to one public parser. Bad input must end in the
// project's own errors (ParseError, TopologyError, PlanError); anything else
// escaping (std::out_of_range, std::invalid_argument, ...) aborts, so the
// fuzzer reports it, as it reports crashes, leaks and undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "topo/core/errors.hpp"
#include "topo/core/model.hpp"
#include "topo/output/nccl_topo_writer.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/node_snapshot.hpp"

namespace gputopo_fuzz {

inline std::string text_of(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// Runs f; the project's errors are the expected answer to bad input.
template <class F>
void expect_clean(F&& f) {
    try {
        f();
    } catch (const gputopo::ParseError&) {
    } catch (const gputopo::TopologyError&) {
    } catch (const gputopo::PlanError&) {
    }
}

// What a reader's node goes through next: the snapshot round trip (the cache
// must read back what it wrote), plans for every GPU in each mode and the NCCL
// writer.
inline void exercise_node(const gputopo::Node& node) {
    const std::string snap = gputopo::write_node_snapshot(node);
    gputopo::Node back = gputopo::read_node_snapshot(snap, "fuzz.snap");  // must not throw
    if (gputopo::write_node_snapshot(back) != snap) std::abort();
    gputopo::PlanRequest r;
    for (const gputopo::Gpu& g : node.gpus) r.gpus.push_back(g.index);
    r.ntasks = r.gpus.empty() ? 1 : static_cast<int>(r.gpus.size());
    for (gputopo::Mode m : {gputopo::Mode::Closest, gputopo::Mode::Island}) {
        r.mode = m;
        expect_clean([&] { gputopo::make_plan(back, r); });
    }
    (void)gputopo::nccl_topology_xml(back);
}

}  // namespace gputopo_fuzz
