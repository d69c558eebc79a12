// --gpu-topo=MODE[,FLAG...]: the user's option, parsed once, the same way in
// srun, sbatch, salloc and slurmstepd (and for plugstack.conf's default=).
#pragma once

#include <string>

#include "topo/plan/planner.hpp"

namespace gputopo::step {

struct Options {
    Mode mode = Mode::None;
    bool verbose = false;  // one line per task on the user's stderr
    bool strict = false;   // fail the step when the binding cannot be applied
    bool isolate = false;  // each task sees only its own GPU(s)
    bool share = false;    // every task sees all the step's GPUs, even with several per task
    bool membind = false;  // strict memory binding (MPOL_BIND); default: preferred (MPOL_PREFERRED[_MANY])
    bool whole_cores = false;  // PlanRequest::whole_cores: whole cores elsewhere, not local hardware threads
    bool framework = true; // the plugin sets RANK, WORLD_SIZE, MASTER_ADDR, ... (flag noframework: not)
    bool help = false;     // print the help text and fail
    // island mode: a parallel layout given as words of the value
    // ("island,tp=8,pp=4,order=tp-cp-ep-dp-pp" -> "tp=8,pp=4,order=..."), checked by
    // ParallelLayout::parse (topo/fabric/parallel_layout.hpp); "" when none.
    std::string layout;
    // with a layout: the NVLink domain, word nvlink=node|island|N
    // (parse_nvlink_domain, topo/fabric/layout_placement.hpp); "" = node.
    std::string nvlink_domain;
};

// The option's one name: srun/sbatch/salloc's --gpu-topo (the plugin) and
// gputopo-launch's --gpu-topo.
inline constexpr char kGpuTopoOption[] = "gpu-topo";

// Throws ParseError, e.g. "unknown mode 'x' in --gpu-topo=x (expected
// none, closest or island; flags: verbose, strict, isolate, share, membind, wholecores, noframework, help)".
// `where` names the input in messages ("--gpu-topo=" or "default=").
Options parse_gpu_topo(const std::string& value, const std::string& where = "--gpu-topo=");

// "island,verbose,strict": the canonical text of the options.
std::string to_string(const Options& o);

// The text --gpu-topo=help prints.
std::string help_text();

}  // namespace gputopo::step
