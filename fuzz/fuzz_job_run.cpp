// What `gputopo run` reads from others (run/): srun's output as it
// comes (labelled rank lines and srun's own, split anywhere), the step's end
// judged from it, a heartbeat file's content, and its own command line (one
// word per line after the first NUL). No input may crash, leak, throw anything
// but JobUsageError from the options, or make a verdict name a node outside
// the step.
#include <algorithm>

#include "fuzz/fuzz_common.hpp"
#include "run/heartbeat.hpp"
#include "run/job_options.hpp"
#include "run/rank_output.hpp"
#include "run/step_end.hpp"
#include "topo/core/strings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gputopo::launch::job;
    const std::string all = gputopo_fuzz::text_of(data, size);
    const size_t nul = all.find('\0');
    const std::string out = all.substr(0, nul);
    // srun's output through RankOutput, fed in two pieces (a line may be cut anywhere).
    RankOutput ro(8, true, 4, 256);
    const size_t cut = out.size() / 3;
    ro.feed(out.data(), cut, true);
    ro.feed(out.data() + cut, out.size() - cut, true);
    ro.flush(true);
    ro.feed(out.data(), out.size(), false);
    StepEndFacts f;
    f.events = srun_events(ro.srun_tail());
    for (int r : ro.ranks_seen()) {
        f.rank_tails[r] = ro.rank_tail(r);
        f.rank_exceptions[r] = ro.rank_exception(r);
    }
    f.slots = {"n1", "n2", "n3", "n4"};
    f.tasks_per_node = 2;
    f.srun_status = 1;
    StepVerdict v = root_cause(f, gputopo::launch::ClassifyPolicy{});
    if (!v.node.empty() && std::find(f.slots.begin(), f.slots.end(), v.node) == f.slots.end()) {
        // srun named a node outside the step: never to be blamed (it would be excluded).
        bool named_by_srun = false;
        for (const auto& e : f.events) named_by_srun = named_by_srun || e.node == v.node;
        if (!named_by_srun) __builtin_trap();
    }
    Beat b = parse_beat(out, 1.0);
    if (b.where.size() > 80) __builtin_trap();
    if (nul != std::string::npos) {
        std::vector<std::string> words = gputopo::split_fields(all.substr(nul + 1), '\n');
        try {
            (void)parse_job_options(words);
        } catch (const JobUsageError&) {
        }
    }
    return 0;
}
