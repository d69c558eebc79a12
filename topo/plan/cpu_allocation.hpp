// CPU and memory binding for a node's local tasks (planner rule 3). Pure and
// deterministic.
//
// Units are whole cores (node.cores, SMT siblings together) restricted to the
// allowed CPUs; when the source knows no cores (NCCL XML without the x86
// SMT pattern, topo/sources/smt_siblings.hpp) every PU is a unit and, with
// several tasks, a note says that tasks may share cores.
// Each task has a locality domain: the CPUs local to its GPUs (empty: no
// preference, e.g. a CPU-only step or GPUs of unknown locality: all units).
// Tasks with the same domain form a class.
//  - More tasks than cores: a class whose domain holds fewer allowed cores
//    than it has tasks, by default, splits those cores into hardware threads
//    (one unit per PU), so its tasks stay on their GPUs' CPUs (as mpibind
//    does; a note says so). With `whole_cores` (--gpu-topo=...,wholecores,
//    gputopo plan --whole-cores) cores are never split and the class spills
//    (below): each task keeps whole cores, some on other NUMA nodes.
//  - Every task that can be local is: first, each task gets one unit of its
//    domain by a maximum matching of tasks to domain units (augmenting paths,
//    most constrained tasks first), so a task whose GPUs span two NUMA nodes
//    never takes the only cores another task has.
//  - A class whose tasks all got a local unit stays inside its domain and
//    shares ALL of it: balanced (sizes differ by at most one unit, earlier
//    tasks get the larger share), contiguous blocks in core order. Units
//    outside every domain stay unused.
//  - A class with a task that got no local unit spills: its tasks take, after
//    the domain's units, the nearest other units (same NUMA node, then same
//    package, then the rest; in each level units no other task wants first,
//    then core order), each up to ceil(units / tasks).
//  - Units are dealt one per task per round in task order, so tasks competing
//    for the same units end up balanced; afterwards each class's units are
//    laid out again as contiguous blocks, level by level (so every task keeps
//    its local units).
//  - Fewer units than tasks: every task gets one unit, the one used by the
//    fewest tasks so far: among its domain's units (with whole_cores: among
//    all, nearest first on ties). Tasks share; a note says so.
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
// allowed: the CPUs the step may use. whole_cores: never split cores into
// hardware threads (spill instead). Appends human-readable notes.
std::vector<TaskCpus> allocate_cpus(const Node& node, const std::vector<CpuSet>& domains, const CpuSet& allowed,
                                    bool whole_cores, std::vector<std::string>& notes);

// The CPUs a task asking for `n` CPUs (-c/--cpus-per-task, SLURM_CPUS_PER_TASK)
// gets, never fewer than n while `allowed` has them:
//  - its planned `share` has n or more: the first n of it, whole cores first
//    (cores in the node's order, every hardware thread of a core that lies
//    wholly in the share), then single threads of the cores left;
//  - fewer (its GPUs' local CPUs are fewer than it asked Slurm for): all of the
//    share, then the nearest other CPUs of `allowed` (the task's cpuset): the
//    NUMA nodes of `near` (the CPUs local to its GPUs; the share when that is
//    empty) first, then their packages, then the rest; in each level whole
//    cores before single threads, core order; CPUs in `held` (other tasks'
//    CPUs) only after every free one, in the same order.
// n <= 0: the share as it is.
CpuSet cpus_for_count(const Node& node, const CpuSet& share, const CpuSet& near, const CpuSet& allowed,
                      const CpuSet& held, int n);

// The NUMA nodes (OS indices) holding CPUs of `cpus`, sorted: the memory a task
// on those CPUs is bound to.
std::vector<int> numa_nodes_of(const Node& node, const CpuSet& cpus);

}  // namespace gputopo
