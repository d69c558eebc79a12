#include "topo/sources/smt_siblings.hpp"

#include <algorithm>
#include <map>

#include "topo/core/errors.hpp"
#include "topo/core/files.hpp"

namespace gputopo {

namespace {

// One Core per sibling set, in order of their first PU.
void set_cores(Node& node, std::vector<CpuSet> sets) {
    std::sort(sets.begin(), sets.end(), [](const CpuSet& a, const CpuSet& b) { return a.first() < b.first(); });
    node.cores.clear();
    for (auto& s : sets) {
        Core c;
        c.pus = s;
        c.numa = node.numa_of_pu(s.first());
        c.package = node.package_of_pu(s.first());
        node.cores.push_back(c);
    }
}

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

}  // namespace

bool cores_from_sysfs(Node& node, const std::string& root) {
    if (node.cpus.empty()) return false;
    try {
        const std::string base = (root.empty() ? std::string() : root) + "/sys/devices/system/cpu/cpu";
        std::map<int, CpuSet> by_first;
        CpuSet covered;
        for (int pu : node.cpus.to_vector()) {
            const std::string text = trimmed(read_first_line(base + std::to_string(pu) + "/topology/thread_siblings_list"));
            if (text.empty()) return false;
            CpuSet s = CpuSet::parse_list(text);
            if (!s.test(pu) || !node.cpus.contains(s)) return false;  // not this model's CPUs: not its node
            by_first[s.first()] = s;
            covered |= s;
        }
        if (covered != node.cpus) return false;
        std::vector<CpuSet> sets;
        for (auto& [first, s] : by_first) sets.push_back(s);
        // Sibling sets must not overlap (each PU in exactly one core).
        CpuSet seen;
        for (const auto& s : sets) {
            if (seen.intersects(s)) return false;
            seen |= s;
        }
        set_cores(node, std::move(sets));
        return true;
    } catch (const std::exception&) {
        return false;  // unreadable or malformed sysfs: pairing unknown
    }
}

bool cores_from_x86_enumeration(Node& node) {
    if (!node.cores.empty() || node.numa_nodes.empty()) return false;
    const int total = node.cpus.count();
    if (total < 2 || total % 2 != 0 || node.cpus != CpuSet::range(0, total - 1)) return false;
    const int half = total / 2;
    for (int i = 0; i < half; ++i) {
        int a = node.numa_of_pu(i), b = node.numa_of_pu(i + half);
        if (a < 0 || a != b) return false;
    }
    // Each NUMA node's CPUs are two runs, one in each half: a single range
    // (one NUMA node 0..T-1) says nothing about SMT.
    for (const auto& n : node.numa_nodes)
        if (!n.cpus.empty() && n.cpus == CpuSet::range(n.cpus.first(), n.cpus.last())) return false;
    std::vector<CpuSet> sets;
    for (int i = 0; i < half; ++i) {
        CpuSet s;
        s.set(i);
        s.set(i + half);
        sets.push_back(s);
    }
    set_cores(node, std::move(sets));
    return true;
}

void infer_smt_cores(Node& node, bool x86_64) {
    if (node.cores.empty() && x86_64) cores_from_x86_enumeration(node);
}

}  // namespace gputopo
