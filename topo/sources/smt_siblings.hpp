// Hardware-thread (SMT) pairing for a node model whose source knows no cores
// (NCCL/RCCL XML): without it the planner treats every PU as a core and two
// tasks can get the two threads of the same cores (OCI H100: 0-55 and
// 112-167 on a 2x56-core Xeon with 224 threads).
//  - On the node itself: the kernel's own answer, ROOT/sys/devices/system/
//    cpu/cpuN/topology/thread_siblings_list for every CPU of the model.
//  - A file alone: the x86 Linux enumeration rule (the kernel numbers every
//    core's first thread before any second thread: CPU i and i + T/2 are one
//    core's threads, T the CPU count) only where the file says it is such a
//    machine: every <cpu> arch="x86_64", CPUs 0..T-1, T even, every NUMA
//    node holding CPU i also holding i + T/2, and every NUMA node's CPUs two
//    runs, not one range (a file with SMT off, or a single NUMA node
//    0..T-1, does not match). Otherwise the pairing is unknown: the planner
//    plans single PUs and its plan says so (cpu_allocation.hpp).
#pragma once

#include <string>

#include "topo/core/model.hpp"

namespace gputopo {

// node.cores from sysfs when sysfs knows exactly the model's CPUs (the file
// is this node's): the kernel's pairing replaces a file's or a rule's; true
// when cores were set. Never throws. root "" = "/".
bool cores_from_sysfs(Node& node, const std::string& root = "");

// node.cores by the x86 enumeration rule (above) when the model has none and
// matches; true when cores were filled.
bool cores_from_x86_enumeration(Node& node);

// The file readers' rule: x86 (every <cpu> said x86_64) -> the enumeration
// rule where it matches; otherwise the cores stay unknown.
void infer_smt_cores(Node& node, bool x86_64);

}  // namespace gputopo
