#include "step/apply.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "topo/core/files.hpp"

namespace gputopo::step {

namespace {

// <numaif.h> values (libnuma is not a dependency).
const int kMpolPreferred = 1;
const int kMpolBind = 2;
const int kMpolPreferredMany = 5;
const int kMaskBits = static_cast<int>(sizeof(unsigned long) * 8);
const unsigned long kMaxNode = 16 * sizeof(unsigned long) * 8;

// The affinity half of prepare_apply: "" or why the CPUs cannot be a mask.
std::string prepare_affinity(const CpuSet& cpus, PreparedApply& p) {
    CPU_ZERO(&p.cpus);
    for (int c : cpus.to_vector()) {
        if (c >= CPU_SETSIZE) return "CPU " + std::to_string(c) + " is beyond this host's CPU set size";
        CPU_SET(c, &p.cpus);
    }
    p.cpus_list = cpus.to_list();
    return "";
}

// The memory half: "" or why the nodes cannot be a policy on this host.
std::string prepare_mempolicy(MemPolicy policy, const std::vector<int>& wanted, PreparedApply& p) {
    if (policy != MemPolicy::None)
        for (int m : wanted) {
            if (m < 0 || m >= static_cast<int>(kMaxNode)) return "NUMA node " + std::to_string(m) + " out of range";
            if (access(("/sys/devices/system/node/node" + std::to_string(m)).c_str(), F_OK) != 0)
                return "NUMA node " + std::to_string(m) + " does not exist on this host";
        }
    // Only the nodes of this process's cpuset.mems (Slurm's ConstrainCores sets it).
    std::vector<int> mems = wanted;
    const std::vector<int> allowed = allowed_mems();
    if (!allowed.empty() && !mems.empty()) {
        mems.clear();
        for (int m : wanted)
            if (std::find(allowed.begin(), allowed.end(), m) != allowed.end()) mems.push_back(m);
        if (mems.empty() && policy != MemPolicy::None) {
            std::string w, a;
            for (int m : wanted) w += (w.empty() ? "" : ",") + std::to_string(m);
            for (int m : allowed) a += (a.empty() ? "" : ",") + std::to_string(m);
            return "NUMA node(s) " + w + " are outside this task's cpuset.mems (" + a + ")";
        }
    }
    p.policy = (policy == MemPolicy::None || mems.empty()) ? MemPolicy::None : policy;
    if (p.policy == MemPolicy::None) return "";
    for (int m : mems) p.mask[m / kMaskBits] |= 1UL << (m % kMaskBits);
    p.first[mems[0] / kMaskBits] = 1UL << (mems[0] % kMaskBits);
    p.mode = policy == MemPolicy::Bind ? kMpolBind : mems.size() == 1 ? kMpolPreferred : kMpolPreferredMany;
    p.mems = mems;
    return "";
}

bool set_mempolicy(int mode, const unsigned long* mask) {
    return syscall(SYS_set_mempolicy, mode, mask, kMaxNode) == 0;
}

std::string apply_prepared_mempolicy(const PreparedApply& p) {
    if (p.policy == MemPolicy::None) return "";
    bool ok = set_mempolicy(p.mode, p.mask);
    if (!ok && errno == EINVAL && p.mode == kMpolPreferredMany)  // kernel < 5.15: prefer the first node
        ok = set_mempolicy(kMpolPreferred, p.first);
    if (!ok) return std::string("set_mempolicy(") + mempolicy_name(p.policy) + "): " + std::strerror(errno);
    return "";
}

}  // namespace

PreparedApply prepare_apply(const TaskAction& a) {
    PreparedApply p;
    CPU_ZERO(&p.cpus);
    if (!a.apply_affinity && !a.apply_memory) return p;
    p.active = true;
    p.memory_only = !a.apply_affinity;
    if (!p.memory_only) p.cpus_error = prepare_affinity(a.cpus, p);
    if (p.cpus_error.empty()) p.mems_error = prepare_mempolicy(a.mempolicy, a.mems, p);
    return p;
}

Applied apply_prepared(const PreparedApply& p) {
    Applied out;
    if (!p.active) return out;
    if (!p.cpus_error.empty()) {
        out.problem = "affinity not applied: " + p.cpus_error;
        return out;
    }
    if (!p.memory_only) {
        if (sched_setaffinity(0, sizeof p.cpus, &p.cpus) != 0) {
            out.problem = "affinity not applied: sched_setaffinity(" + p.cpus_list + "): " + std::strerror(errno);
            return out;
        }
        out.cpus = true;
    }
    std::string mem = p.mems_error.empty() ? apply_prepared_mempolicy(p) : p.mems_error;
    if (!mem.empty())
        out.problem = (out.cpus ? "CPUs " + p.cpus_list + " applied; " : std::string()) +
                      "memory policy not applied: " + mem;
    return out;
}

Applied apply_task(const TaskAction& a) { return apply_prepared(prepare_apply(a)); }

std::string apply_mempolicy(MemPolicy policy, const std::vector<int>& mems) {
    PreparedApply p;
    std::string why = prepare_mempolicy(policy, mems, p);
    return why.empty() ? apply_prepared_mempolicy(p) : why;
}

std::vector<int> allowed_mems() {
    unsigned long mask[16] = {};
    const int kMpolFMemsAllowed = 4;  // <numaif.h> MPOL_F_MEMS_ALLOWED
    if (syscall(SYS_get_mempolicy, nullptr, mask, kMaxNode, nullptr, kMpolFMemsAllowed) != 0) return {};
    std::vector<int> out;
    for (int n = 0; n < static_cast<int>(kMaxNode); ++n)
        if (mask[n / kMaskBits] & (1UL << (n % kMaskBits))) out.push_back(n);
    return out;
}

CpuSet online_cpus() {
    if (std::string line = read_first_line("/sys/devices/system/cpu/online"); !line.empty()) {
        try {
            return CpuSet::parse_list(line);
        } catch (const std::exception&) {
        }
    }
    long n = sysconf(_SC_NPROCESSORS_CONF);
    return n > 0 ? CpuSet::range(0, static_cast<int>(n) - 1) : CpuSet();
}

CpuSet current_affinity() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return online_cpus();
    CpuSet s;
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) s.set(i);
    return s;
}

std::string binding_failure(const TaskAction& a, const Applied& applied) {
    if (!applied.problem.empty()) return applied.problem;
    if (!a.cpus.empty() && !a.apply_affinity && !a.user_bound) return a.skip_reason;
    return "";
}

}  // namespace gputopo::step
