#include "step/apply.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

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
std::string prepare_mempolicy(MemPolicy policy, const std::vector<int>& mems, PreparedApply& p) {
    p.policy = (policy == MemPolicy::None || mems.empty()) ? MemPolicy::None : policy;
    if (p.policy == MemPolicy::None) return "";
    for (int m : mems) {
        if (m < 0 || m >= static_cast<int>(kMaxNode)) return "NUMA node " + std::to_string(m) + " out of range";
        if (access(("/sys/devices/system/node/node" + std::to_string(m)).c_str(), F_OK) != 0)
            return "NUMA node " + std::to_string(m) + " does not exist on this host";
        p.mask[m / kMaskBits] |= 1UL << (m % kMaskBits);
    }
    p.first[mems[0] / kMaskBits] = 1UL << (mems[0] % kMaskBits);
    p.mode = policy == MemPolicy::Bind ? kMpolBind : mems.size() == 1 ? kMpolPreferred : kMpolPreferredMany;
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
    if (!a.apply_affinity) return p;
    p.active = true;
    p.cpus_error = prepare_affinity(a.cpus, p);
    if (p.cpus_error.empty()) p.mems_error = prepare_mempolicy(a.mempolicy, a.mems, p);
    return p;
}

std::string apply_prepared(const PreparedApply& p) {
    if (!p.active) return "";
    if (!p.cpus_error.empty()) return p.cpus_error;
    if (sched_setaffinity(0, sizeof p.cpus, &p.cpus) != 0)
        return "sched_setaffinity(" + p.cpus_list + "): " + std::strerror(errno);
    if (!p.mems_error.empty()) return p.mems_error;
    return apply_prepared_mempolicy(p);
}

std::string apply_task(const TaskAction& a) { return apply_prepared(prepare_apply(a)); }

std::string apply_mempolicy(MemPolicy policy, const std::vector<int>& mems) {
    PreparedApply p;
    std::string why = prepare_mempolicy(policy, mems, p);
    return why.empty() ? apply_prepared_mempolicy(p) : why;
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

std::string binding_failure(const TaskAction& a, const std::string& apply_error) {
    if (!apply_error.empty()) return "affinity not applied: " + apply_error;
    if (!a.cpus.empty() && !a.apply_affinity && !a.user_bound) return a.skip_reason;
    return "";
}

}  // namespace gputopo::step
