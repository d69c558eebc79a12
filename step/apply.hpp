// The one applier of a task's CPU affinity and memory policy, used by the
// SPANK plugin (in the forked task, before exec) and by gputopo-launch (in
// itself, before it starts the program, which inherits both).
#pragma once

#include <sched.h>

#include <string>
#include <vector>

#include "step/step_binding.hpp"

namespace gputopo::step {

// A task's CPU affinity and memory policy made ready: the masks built and the
// NUMA nodes checked on this host, so that applying is two system calls and
// nothing else. The plugin prepares every task before slurmstepd forks them:
// what a forked task touches costs it page faults.
struct PreparedApply {
    bool active = false;           // the TaskAction's apply_affinity or apply_memory
    bool memory_only = false;      // apply_memory: the CPUs stay as they are
    std::string cpus_error;        // found while preparing: applying returns it and applies nothing
    std::string mems_error;        // found while preparing: applying sets the affinity, then returns it
    cpu_set_t cpus;                // sched_setaffinity's mask
    std::string cpus_list;         // the CPUs, for a message
    MemPolicy policy = MemPolicy::None;
    int mode = 0;                  // set_mempolicy's mode (MPOL_*)
    unsigned long mask[16] = {};   // its node mask
    unsigned long first[16] = {};  // the first node alone: MPOL_PREFERRED where the kernel lacks MPOL_PREFERRED_MANY
    std::vector<int> mems;         // the nodes of the policy: the planned ones within cpuset.mems
};

PreparedApply prepare_apply(const TaskAction& a);

// What applying did. The CPUs and the memory policy are applied one after the
// other; a memory policy that cannot be set (a NUMA node of the topology this
// host lacks) leaves the CPUs applied, and `problem` says both halves.
struct Applied {
    bool cpus = false;     // sched_setaffinity set the planned CPUs
    // "" when everything to apply was applied (or nothing was to be), else one
    // line that says what was and was not applied:
    //   "affinity not applied: sched_setaffinity(0-3): Invalid argument"
    //   "CPUs 1 applied; memory policy not applied: NUMA node 1 does not exist on this host"
    std::string problem;
};

// Applies a prepared task to the calling process: sched_setaffinity, then
// set_mempolicy. Allocates only to say what failed.
Applied apply_prepared(const PreparedApply& p);

// prepare_apply then apply_prepared, in the calling process (gputopo-launch).
Applied apply_task(const TaskAction& a);

// The memory policy alone: MPOL_PREFERRED_MANY (several nodes; MPOL_PREFERRED
// on the first where the kernel lacks it, before 5.15), MPOL_PREFERRED (one)
// or MPOL_BIND. Every node must exist on this host. Returns "" or why not.
std::string apply_mempolicy(MemPolicy policy, const std::vector<int>& mems);

// What `strict` fails a task for, "" when nothing: what applying left
// undone (Applied::problem), or CPUs planned on a topology that is not this
// host's. A binding the user asked Slurm for (--cpu-bind=map_cpu, ...) is no failure.
std::string binding_failure(const TaskAction& a, const Applied& applied);

// The NUMA nodes the calling process may allocate on (its cpuset.mems:
// get_mempolicy(MPOL_F_MEMS_ALLOWED)); empty when it cannot be read.
std::vector<int> allowed_mems();

// The CPUs this host has (/sys/devices/system/cpu/online) and the CPUs the
// calling process may run on (sched_getaffinity): StepSetup's host_cpus and
// affinity.
CpuSet online_cpus();
CpuSet current_affinity();

}  // namespace gputopo::step
