#include "step/apply.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace gputopo::step {

namespace {

// <numaif.h> values (libnuma is not a dependency).
const int kMpolPreferred = 1;
const int kMpolBind = 2;
const int kMpolPreferredMany = 5;

std::string apply_affinity(const CpuSet& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus.to_vector()) {
        if (c >= CPU_SETSIZE) return "CPU " + std::to_string(c) + " is beyond this host's CPU set size";
        CPU_SET(c, &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return "sched_setaffinity(" + cpus.to_list() + "): " + std::strerror(errno);
    return "";
}

}  // namespace

std::string apply_mempolicy(MemPolicy policy, const std::vector<int>& mems) {
    if (policy == MemPolicy::None || mems.empty()) return "";
    const int bits = static_cast<int>(sizeof(unsigned long) * 8);
    unsigned long mask[16] = {0};
    for (int m : mems) {
        if (m < 0 || m >= 16 * bits) return "NUMA node " + std::to_string(m) + " out of range";
        if (access(("/sys/devices/system/node/node" + std::to_string(m)).c_str(), F_OK) != 0)
            return "NUMA node " + std::to_string(m) + " does not exist on this host";
        mask[m / bits] |= 1UL << (m % bits);
    }
    const unsigned long maxnode = static_cast<unsigned long>(16 * bits);
    auto set = [&](int mode, const unsigned long* m) { return syscall(SYS_set_mempolicy, mode, m, maxnode) == 0; };
    bool ok;
    if (policy == MemPolicy::Bind) {
        ok = set(kMpolBind, mask);
    } else if (mems.size() == 1) {
        ok = set(kMpolPreferred, mask);
    } else {
        ok = set(kMpolPreferredMany, mask);
        if (!ok && errno == EINVAL) {  // kernel < 5.15: prefer the first node
            unsigned long first[16] = {0};
            first[mems[0] / bits] = 1UL << (mems[0] % bits);
            ok = set(kMpolPreferred, first);
        }
    }
    if (!ok) return std::string("set_mempolicy(") + mempolicy_name(policy) + "): " + std::strerror(errno);
    return "";
}

CpuSet online_cpus() {
    std::ifstream f("/sys/devices/system/cpu/online");
    std::string line;
    if (f && std::getline(f, line)) {
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

std::string apply_task(const TaskAction& a) {
    if (!a.apply_affinity) return "";
    std::string why = apply_affinity(a.cpus);
    if (why.empty()) why = apply_mempolicy(a.mempolicy, a.mems);
    return why;
}

}  // namespace gputopo::step
