#include "topo/plan/cpu_allocation.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>

#include "topo/core/strings.hpp"

namespace gputopo {

namespace {

// What tasks are given: a whole core (its allowed PUs) or, on cores split
// into hardware threads, one PU.
struct Unit {
    CpuSet pus;
    int first = -1;  // lowest PU
    int core = -1;   // lowest allowed PU of its core: the units of a core sort together
    int numa = -1;
    int package = -1;
};

// Tasks with the same domain, in order of first appearance.
struct Classes {
    std::vector<CpuSet> domain;
    std::vector<std::vector<int>> tasks;
    std::vector<int> of;  // task -> class
};

// How near each unit is to each class, and each class's units in the order it
// takes them.
struct Preferences {
    std::vector<std::vector<int>> level;  // [class][unit]: 0 in the domain, 1 same NUMA node, 2 same package, 3 other
    std::vector<std::vector<int>> local;  // [class]: the domain's units
    std::vector<std::vector<int>> other;  // [class]: the rest, nearest first
};

using Owned = std::vector<std::vector<int>>;  // [task]: unit indices

size_t at(int i) { return static_cast<size_t>(i); }

bool in_domain(const CpuSet& domain, const CpuSet& pus) { return domain.empty() || domain.contains(pus); }

Classes classes_of(const std::vector<CpuSet>& domains) {
    Classes cls;
    for (const CpuSet& d : domains) {
        auto it = std::find(cls.domain.begin(), cls.domain.end(), d);
        int c = static_cast<int>(it - cls.domain.begin());
        if (it == cls.domain.end()) {
            cls.domain.push_back(d);
            cls.tasks.emplace_back();
        }
        cls.tasks[at(c)].push_back(static_cast<int>(cls.of.size()));
        cls.of.push_back(c);
    }
    return cls;
}

// Hardware-thread policy: the PUs of the cores that are split into one unit
// per PU: the allowed cores of every class's domain that holds fewer of them
// than the class has tasks (and more PUs than cores).
CpuSet cores_to_split(const Node& node, const Classes& cls, const CpuSet& universe) {
    CpuSet split;
    for (size_t c = 0; c < cls.domain.size(); ++c) {
        CpuSet pus;
        int cores = 0;
        for (const auto& core : node.cores) {
            CpuSet s = core.pus & universe;
            if (s.empty() || !in_domain(cls.domain[c], s)) continue;
            ++cores;
            pus |= s;
        }
        if (cores < static_cast<int>(cls.tasks[c].size()) && pus.count() > cores) split |= pus;
    }
    return split;
}

std::vector<Unit> build_units(const Node& node, const CpuSet& universe, const CpuSet& split) {
    std::vector<Unit> units;
    auto add = [&](const CpuSet& pus, int core, int numa, int package) {
        Unit u;
        u.pus = pus;
        u.first = pus.first();
        u.core = core;
        u.numa = numa >= 0 ? numa : node.numa_of_pu(u.first);
        u.package = package >= 0 ? package : node.package_of_pu(u.first);
        units.push_back(u);
    };
    CpuSet covered;
    for (const auto& core : node.cores) {
        CpuSet s = core.pus & universe;
        covered |= core.pus;
        if (s.empty()) continue;
        if (s.intersects(split))
            for (int pu : s.to_vector()) add(CpuSet::range(pu, pu), s.first(), core.numa, core.package);
        else
            add(s, s.first(), core.numa, core.package);
    }
    for (int pu : (universe - covered).to_vector()) add(CpuSet::range(pu, pu), pu, -1, -1);
    std::sort(units.begin(), units.end(),
              [](const Unit& a, const Unit& b) { return std::tie(a.core, a.first) < std::tie(b.core, b.first); });
    return units;
}

// Domain units least wanted by other classes first, then core order; the
// other units by nearness (same NUMA node, same package, the rest), least
// wanted first, then core order.
Preferences rank_units(const Node& node, const std::vector<Unit>& units, const Classes& cls) {
    const size_t nclasses = cls.domain.size(), nunits = units.size();
    Preferences p;
    p.level.assign(nclasses, std::vector<int>(nunits, 0));
    p.local.resize(nclasses);
    p.other.resize(nclasses);
    std::vector<int> wanted_by(nunits, 0);  // classes whose domain holds the unit
    for (size_t c = 0; c < nclasses; ++c)
        for (size_t u = 0; u < nunits; ++u)
            if (in_domain(cls.domain[c], units[u].pus)) ++wanted_by[u];
    for (size_t c = 0; c < nclasses; ++c) {
        std::vector<int> numas, packages;
        for (const auto& n : node.numa_nodes)
            if (n.cpus.intersects(cls.domain[c])) numas.push_back(n.os_index);
        for (const auto& pk : node.packages)
            if (pk.cpus.intersects(cls.domain[c])) packages.push_back(pk.os_index);
        auto has = [](const std::vector<int>& v, int x) { return x >= 0 && std::find(v.begin(), v.end(), x) != v.end(); };
        for (size_t u = 0; u < nunits; ++u) {
            const Unit& un = units[u];
            int lv = in_domain(cls.domain[c], un.pus) ? 0 : has(numas, un.numa) ? 1 : has(packages, un.package) ? 2 : 3;
            p.level[c][u] = lv;
            (lv == 0 ? p.local[c] : p.other[c]).push_back(static_cast<int>(u));
        }
        auto by_pref = [&](int a, int b) {
            return std::make_tuple(p.level[c][at(a)], wanted_by[at(a)], a) <
                   std::make_tuple(p.level[c][at(b)], wanted_by[at(b)], b);
        };
        std::sort(p.local[c].begin(), p.local[c].end(), by_pref);
        std::sort(p.other[c].begin(), p.other[c].end(), by_pref);
    }
    return p;
}

// A maximum matching of tasks to units of their domains (augmenting paths,
// most constrained tasks first, each trying its units in preference order):
// as many tasks as possible get one local unit. -1: the task can get none.
std::vector<int> match_local(const Classes& cls, const Preferences& pref, int nunits) {
    const int ntasks = static_cast<int>(cls.of.size());
    std::vector<int> unit_of(at(ntasks), -1), task_of(at(nunits), -1), seen(at(nunits), -1);
    std::vector<int> order(at(ntasks));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return pref.local[at(cls.of[at(a)])].size() < pref.local[at(cls.of[at(b)])].size();
    });
    std::function<bool(int, int)> augment = [&](int t, int round) {
        for (int u : pref.local[at(cls.of[at(t)])]) {
            if (seen[at(u)] == round) continue;
            seen[at(u)] = round;
            if (task_of[at(u)] < 0 || augment(task_of[at(u)], round)) {
                task_of[at(u)] = t;
                unit_of[at(t)] = u;
                return true;
            }
        }
        return false;
    };
    for (int i = 0; i < ntasks; ++i) augment(order[at(i)], i);
    return unit_of;
}

// Fewer units than tasks: each task gets one unit, used by the fewest tasks
// so far; with `stay_local`, one of its domain's units when it has any.
Owned share_units(const Classes& cls, const Preferences& pref, int nunits, bool stay_local) {
    const int ntasks = static_cast<int>(cls.of.size());
    std::vector<int> uses(at(nunits), 0);
    Owned owned(at(ntasks));
    for (int t = 0; t < ntasks; ++t) {
        size_t c = at(cls.of[at(t)]);
        int best = -1;
        for (const auto* list : {&pref.local[c], &pref.other[c]}) {
            if (stay_local && best >= 0) break;
            for (int u : *list)
                if (best < 0 || uses[at(u)] < uses[at(best)]) best = u;
        }
        ++uses[at(best)];
        owned[at(t)].push_back(best);
    }
    return owned;
}

// Units dealt one per task per round in task order, starting from the matched
// ones. A class with a task that got no local unit spills: its tasks take,
// after their domain's units, the nearest other units, each up to
// ceil(units / tasks); the other tasks take only domain units.
Owned deal_units(const Classes& cls, const Preferences& pref, const std::vector<int>& matched, int nunits) {
    const int ntasks = static_cast<int>(cls.of.size());
    const int spill_cap = (nunits + ntasks - 1) / ntasks;
    std::vector<int> owner(at(nunits), -1);
    Owned owned(at(ntasks));
    std::vector<bool> spill(at(ntasks), false);
    for (int t = 0; t < ntasks; ++t) {
        if (matched[at(t)] >= 0) {
            owner[at(matched[at(t)])] = t;
            owned[at(t)].push_back(matched[at(t)]);
        } else {
            for (int s : cls.tasks[at(cls.of[at(t)])]) spill[at(s)] = true;
        }
    }
    std::vector<size_t> pos_local(at(ntasks), 0), pos_other(at(ntasks), 0);
    auto next_free = [&](const std::vector<int>& list, size_t& pos) {
        while (pos < list.size() && owner[at(list[pos])] >= 0) ++pos;
        return pos < list.size() ? list[pos] : -1;
    };
    // Round r: every task with fewer than r units takes one (the matched
    // units were round 1); the rounds end with the first in which no task
    // takes a unit, after round 2.
    size_t last = 2;
    for (size_t round = 1; round <= last; ++round) {
        for (int t = 0; t < ntasks; ++t) {
            size_t ts = at(t), c = at(cls.of[ts]);
            if (owned[ts].size() >= round) continue;
            if (spill[ts] && static_cast<int>(owned[ts].size()) >= spill_cap) continue;
            int u = next_free(pref.local[c], pos_local[ts]);
            if (u < 0 && spill[ts]) u = next_free(pref.other[c], pos_other[ts]);
            if (u < 0) continue;
            owner[at(u)] = t;
            owned[ts].push_back(u);
            last = round + 1;
        }
    }
    return owned;
}

// Each class's units laid out again as contiguous blocks in task order, level
// by level (domain units first, then the spilled ones by nearness), so every
// task keeps as many units of each level as it was dealt.
void layout_class_blocks(const Classes& cls, const Preferences& pref, Owned& owned) {
    for (size_t c = 0; c < cls.domain.size(); ++c) {
        Owned next(cls.tasks[c].size());
        for (int level = 0; level <= 3; ++level) {
            std::vector<int> pool;
            std::vector<size_t> count;
            for (int t : cls.tasks[c]) {
                size_t k = 0;
                for (int u : owned[at(t)])
                    if (pref.level[c][at(u)] == level) {
                        pool.push_back(u);
                        ++k;
                    }
                count.push_back(k);
            }
            std::sort(pool.begin(), pool.end());
            size_t from = 0;
            for (size_t i = 0; i < count.size(); ++i) {
                next[i].insert(next[i].end(), pool.begin() + static_cast<long>(from),
                               pool.begin() + static_cast<long>(from + count[i]));
                from += count[i];
            }
        }
        for (size_t i = 0; i < cls.tasks[c].size(); ++i) owned[at(cls.tasks[c][i])] = next[i];
    }
}

// Tasks of different classes that spilled into the same NUMA node got its
// units interleaved: lay out again, as contiguous blocks in task order, every
// set of units that no task can tell apart (same NUMA node, same nearness
// level for every class).
void layout_alike_blocks(const std::vector<Unit>& units, const Preferences& pref, Owned& owned) {
    const int nunits = static_cast<int>(units.size());
    std::vector<int> holder(at(nunits), -1);
    for (size_t t = 0; t < owned.size(); ++t)
        for (int u : owned[t]) holder[at(u)] = static_cast<int>(t);
    std::map<std::vector<int>, std::vector<int>> alike;  // key -> units (core order)
    for (int u = 0; u < nunits; ++u) {
        if (holder[at(u)] < 0) continue;
        std::vector<int> key{units[at(u)].numa};
        for (const auto& lv : pref.level) key.push_back(lv[at(u)]);
        alike[key].push_back(u);
    }
    for (const auto& [key, pool] : alike) {
        std::map<int, int> count;  // task -> units held in this set (task order)
        for (int u : pool) ++count[holder[at(u)]];
        if (count.size() < 2) continue;
        size_t i = 0;
        for (const auto& [t, cnt] : count)
            for (int k = 0; k < cnt; ++k) holder[at(pool[i++])] = t;
    }
    for (auto& o : owned) o.clear();
    for (int u = 0; u < nunits; ++u)
        if (holder[at(u)] >= 0) owned[at(holder[at(u)])].push_back(u);
}

// Tasks (in order) that were given a unit outside their domain.
std::vector<int> spilled_tasks(const Classes& cls, const Preferences& pref, const Owned& owned) {
    std::vector<int> out;
    for (size_t t = 0; t < owned.size(); ++t)
        for (int u : owned[t])
            if (pref.level[at(cls.of[t])][at(u)] > 0) {
                out.push_back(static_cast<int>(t));
                break;
            }
    return out;
}

// Tasks (in order) whose domain's cores were split into hardware threads.
std::vector<int> threaded_tasks(const Classes& cls, const std::vector<Unit>& units, const CpuSet& split) {
    std::vector<int> out;
    for (size_t t = 0; t < cls.of.size(); ++t) {
        const CpuSet& d = cls.domain[at(cls.of[t])];
        bool threaded = false;
        for (const auto& u : units) threaded = threaded || (split.test(u.first) && in_domain(d, u.pus));
        if (threaded) out.push_back(static_cast<int>(t));
    }
    return out;
}

std::vector<TaskCpus> to_task_cpus(const std::vector<Unit>& units, const Owned& owned) {
    std::vector<TaskCpus> out(owned.size());
    for (size_t t = 0; t < owned.size(); ++t) {
        TaskCpus& tc = out[t];
        for (int u : owned[t]) {
            const Unit& un = units[at(u)];
            tc.cpus |= un.pus;
            if (un.numa >= 0 && std::find(tc.mems.begin(), tc.mems.end(), un.numa) == tc.mems.end())
                tc.mems.push_back(un.numa);
        }
        std::sort(tc.mems.begin(), tc.mems.end());
    }
    return out;
}

}  // namespace

std::vector<TaskCpus> allocate_cpus(const Node& node, const std::vector<CpuSet>& domains, const CpuSet& allowed,
                                    bool whole_cores, std::vector<std::string>& notes) {
    const int ntasks = static_cast<int>(domains.size());
    if (ntasks == 0) return {};
    const Classes cls = classes_of(domains);
    const CpuSet universe = node.cpus.empty() ? allowed : (node.cpus & allowed);
    const CpuSet split = whole_cores ? CpuSet() : cores_to_split(node, cls, universe);
    const std::vector<Unit> units = build_units(node, universe, split);
    const int nunits = static_cast<int>(units.size());
    if (nunits == 0) {
        notes.push_back("no CPUs to bind: the step's allowed CPUs are empty or the topology lists no CPUs");
        return std::vector<TaskCpus>(at(ntasks));
    }
    if (node.cores.empty() && ntasks > 1)
        notes.push_back("the topology has no core information (which CPUs are one core's hardware threads is "
                        "unknown): tasks get disjoint CPUs that may be threads of the same cores");
    const Preferences pref = rank_units(node, units, cls);

    Owned owned;
    if (nunits < ntasks) {
        owned = share_units(cls, pref, nunits, !whole_cores);
        notes.push_back(split.empty() ? "fewer CPU cores (" + std::to_string(nunits) + ") than tasks (" +
                                            std::to_string(ntasks) + "): tasks share cores, one core each"
                                      : "fewer CPU cores and hardware threads (" + std::to_string(nunits) +
                                            ") than tasks (" + std::to_string(ntasks) + "): tasks share them, one each");
    } else {
        owned = deal_units(cls, pref, match_local(cls, pref, nunits), nunits);
        layout_class_blocks(cls, pref, owned);
        layout_alike_blocks(units, pref, owned);
        std::vector<int> spilled = spilled_tasks(cls, pref, owned);
        if (!spilled.empty())
            notes.push_back("tasks " + join_ints(spilled) +
                            ": not enough allowed cores local to their GPUs; they also use the nearest other cores");
    }
    std::vector<int> threaded = threaded_tasks(cls, units, split);
    if (!threaded.empty())
        notes.push_back("tasks " + join_ints(threaded) +
                        ": more tasks than allowed cores local to their GPUs; they use those cores' hardware threads");
    return to_task_cpus(units, owned);
}

namespace {

// Whole cores of `pool` (every allowed PU of a core, none already in `out`)
// that fit in what `out` still lacks of n, then single PUs of `pool`; core order.
void take_from(const Node& node, const CpuSet& pool, int n, CpuSet& out) {
    for (const Core& core : node.cores) {
        if (out.count() >= n) return;
        const CpuSet pus = core.pus & pool;
        if (pus.empty() || pus != core.pus - out || out.count() + pus.count() > n) continue;
        out |= pus;
    }
    for (int c : pool.to_vector()) {
        if (out.count() >= n) return;
        out.set(c);
    }
}

}  // namespace

CpuSet cpus_for_count(const Node& node, const CpuSet& share, const CpuSet& near, const CpuSet& allowed,
                      const CpuSet& held, int n) {
    if (n <= 0 || share.count() == n) return share;
    CpuSet out;
    if (share.count() > n) {
        take_from(node, share, n, out);
        return out;
    }
    out = share;
    const CpuSet anchor = near.empty() ? share : near;
    CpuSet numa, package;
    for (const NumaNode& m : node.numa_nodes)
        if (m.cpus.intersects(anchor)) numa |= m.cpus;
    for (const Package& p : node.packages)
        if (p.cpus.intersects(anchor)) package |= p.cpus;
    const CpuSet rest = allowed - out;
    const CpuSet levels[] = {rest & numa, (rest & package) - numa, rest - numa - package};
    for (bool free_ones : {true, false})  // CPUs no other task holds first, then the held ones
        for (const CpuSet& level : levels) {
            take_from(node, free_ones ? level - held : level & held, n, out);
            if (out.count() >= n) return out;
        }
    return out;
}

std::vector<int> numa_nodes_of(const Node& node, const CpuSet& cpus) {
    std::vector<int> out;
    for (const NumaNode& m : node.numa_nodes)
        if (m.cpus.intersects(cpus)) out.push_back(m.os_index);
    return out;
}

}  // namespace gputopo
