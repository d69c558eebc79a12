// OpenMP placement for one task, as LLNL/mpibind sets it: the task's CPUs as
// OpenMP places, one thread per place, threads bound in place order.
// Pure: the caller decides whether the user's values win (they always do:
// every variable here is user_wins).
//
// Rules
// - Places: one per core of the task's CPUs (the task's PUs of that core,
//   "{0,112}"), in core order; when the topology knows no cores (NCCL XML
//   without SMT pairing) one per PU. With -c/--cpus-per-task (`per_thread`)
//   one place per PU: the user asked for that many CPUs, so that many threads.
// - OMP_NUM_THREADS = the number of places; OMP_PLACES = the places;
//   OMP_PROC_BIND=close (thread i on place i, since there are as many threads
//   as places).
// - A task without CPUs (mode none, no CPU binding) gets nothing.
#pragma once

#include <string>
#include <vector>

#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"
#include "topo/core/env_var.hpp"
#include "topo/core/strings.hpp"

namespace gputopo {

// The task's places, each a set of PUs (see above).
std::vector<CpuSet> omp_places(const Node& node, const CpuSet& cpus, bool per_thread);

// "{0,112},{1,113}": OpenMP's place-list syntax (OpenMP 5.2, section 6.1 OMP_PLACES).
std::string format_omp_places(const std::vector<CpuSet>& places);

// OMP_NUM_THREADS, OMP_PLACES, OMP_PROC_BIND for a task on `cpus` (user_wins).
std::vector<EnvVar> omp_env(const Node& node, const CpuSet& cpus, bool per_thread);

}  // namespace gputopo
