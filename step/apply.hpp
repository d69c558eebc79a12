// The one applier of a task's CPU affinity and memory policy, used by the
// SPANK plugin (in the forked task, before exec) and by gputopo-launch (in
// itself, before it starts the program, which inherits both).
#pragma once

#include <string>
#include <vector>

#include "step/step_binding.hpp"

namespace gputopo::step {

// Applies `a` to the calling process when a.apply_affinity: sched_setaffinity
// on a.cpus, then set_mempolicy(a.mempolicy) on a.mems. Returns "" when done
// (or nothing to do), else what failed ("sched_setaffinity(0-3): ...").
std::string apply_task(const TaskAction& a);

// The memory policy alone: MPOL_PREFERRED_MANY (several nodes; MPOL_PREFERRED
// on the first where the kernel lacks it, before 5.15), MPOL_PREFERRED (one)
// or MPOL_BIND. Every node must exist on this host. Returns "" or why not.
std::string apply_mempolicy(MemPolicy policy, const std::vector<int>& mems);

// What `strict` fails a task for, "" when nothing: the error apply_task
// returned, or CPUs planned on a topology that is not this host's. A binding
// the user asked Slurm for (--cpu-bind=map_cpu, ...) is no failure.
std::string binding_failure(const TaskAction& a, const std::string& apply_error);

// The CPUs this host has (/sys/devices/system/cpu/online) and the CPUs the
// calling process may run on (sched_getaffinity): StepSetup's host_cpus and
// affinity.
CpuSet online_cpus();
CpuSet current_affinity();

}  // namespace gputopo::step
