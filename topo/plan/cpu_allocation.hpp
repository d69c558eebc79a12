// CPU and memory binding for a node's local tasks (planner rule 3). Pure and
// deterministic.
//
// Units are whole cores (node.cores, SMT siblings together) restricted to the
// allowed CPUs; when the source knows no cores (NCCL XML) every PU is a unit.
// Each task has a locality domain: the CPUs local to its GPUs (empty: no
// preference, e.g. a CPU-only step or GPUs of unknown locality: all units).
//  - Tasks with the same domain form a class. A class whose domain holds at
//    least one unit per task stays inside it and shares ALL of it: balanced
//    (sizes differ by at most one unit, earlier tasks get the larger share),
//    contiguous blocks in core order. Units outside every domain stay unused.
//  - A class with fewer units than tasks spills: its tasks take, after the
//    domain's units, the nearest other units (same NUMA node, then same
//    package, then the rest; in each level units no other task wants first,
//    then core order), each up to ceil(units / tasks).
//  - Units are dealt one per task per round in task order, so tasks competing
//    for the same units end up balanced; afterwards each class's units are
//    laid out again as contiguous blocks.
//  - Fewer units than tasks: every task gets one unit, the nearest one used
//    by the fewest tasks so far (tasks share; a note says so).
// mems: the NUMA nodes (OS indices) of a task's CPUs.
#pragma once

#include <string>
#include <vector>

#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"

namespace gputopo {

struct TaskCpus {
    CpuSet cpus;
    std::vector<int> mems;
};

// domains[t]: CPUs local to task t's GPUs (empty: no preference).
// allowed: the CPUs the step may use. Appends human-readable notes.
std::vector<TaskCpus> allocate_cpus(const Node& node, const std::vector<CpuSet>& domains, const CpuSet& allowed,
                                    std::vector<std::string>& notes);

}  // namespace gputopo
