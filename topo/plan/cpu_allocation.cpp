#include "topo/plan/cpu_allocation.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace gputopo {

namespace {

struct Unit {
    CpuSet pus;
    int first = -1;
    int numa = -1;
    int package = -1;
};

int numa_of(const Node& node, int pu) {
    for (const auto& n : node.numa_nodes)
        if (n.cpus.test(pu)) return n.os_index;
    return -1;
}

int package_of(const Node& node, int pu) {
    for (const auto& p : node.packages)
        if (p.cpus.test(pu)) return p.os_index;
    return -1;
}

std::vector<Unit> build_units(const Node& node, const CpuSet& allowed) {
    std::vector<Unit> units;
    CpuSet universe = node.cpus.empty() ? allowed : (node.cpus & allowed);
    CpuSet covered;
    auto add = [&](const CpuSet& pus, int numa, int package) {
        Unit u;
        u.pus = pus;
        u.first = pus.first();
        u.numa = numa >= 0 ? numa : numa_of(node, u.first);
        u.package = package >= 0 ? package : package_of(node, u.first);
        units.push_back(u);
    };
    for (const auto& core : node.cores) {
        CpuSet s = core.pus & universe;
        covered |= core.pus;
        if (!s.empty()) add(s, core.numa, core.package);
    }
    for (int pu : (universe - covered).to_vector()) add(CpuSet::range(pu, pu), -1, -1);
    std::sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) { return a.first < b.first; });
    return units;
}

std::string task_list(const std::vector<int>& tasks) {
    std::string s;
    for (size_t i = 0; i < tasks.size(); ++i) s += (i ? "," : "") + std::to_string(tasks[i]);
    return s;
}

}  // namespace

std::vector<TaskCpus> allocate_cpus(const Node& node, const std::vector<CpuSet>& domains, const CpuSet& allowed,
                                    std::vector<std::string>& notes) {
    const int ntasks = static_cast<int>(domains.size());
    std::vector<TaskCpus> out(static_cast<size_t>(ntasks));
    if (ntasks == 0) return out;
    std::vector<Unit> units = build_units(node, allowed);
    const int nunits = static_cast<int>(units.size());
    if (nunits == 0) {
        notes.push_back("no CPUs to bind: the step's allowed CPUs are empty or the topology lists no CPUs");
        return out;
    }

    // Classes of tasks with the same domain, in order of first appearance.
    std::vector<CpuSet> class_domain;
    std::vector<int> class_of(static_cast<size_t>(ntasks));
    std::vector<std::vector<int>> class_tasks;
    for (int t = 0; t < ntasks; ++t) {
        const CpuSet& d = domains[static_cast<size_t>(t)];
        int c = -1;
        for (size_t k = 0; k < class_domain.size(); ++k)
            if (class_domain[k] == d) c = static_cast<int>(k);
        if (c < 0) {
            c = static_cast<int>(class_domain.size());
            class_domain.push_back(d);
            class_tasks.emplace_back();
        }
        class_of[static_cast<size_t>(t)] = c;
        class_tasks[static_cast<size_t>(c)].push_back(t);
    }
    const size_t nclasses = class_domain.size();

    // in_domain[c][u]; a class with an empty domain (no preference) has every unit.
    std::vector<std::vector<bool>> in_domain(nclasses, std::vector<bool>(static_cast<size_t>(nunits), false));
    std::vector<int> wanted_by(static_cast<size_t>(nunits), 0);  // classes whose domain holds the unit
    for (size_t c = 0; c < nclasses; ++c)
        for (int u = 0; u < nunits; ++u) {
            bool in = class_domain[c].empty() || class_domain[c].contains(units[static_cast<size_t>(u)].pus);
            in_domain[c][static_cast<size_t>(u)] = in;
            if (in) ++wanted_by[static_cast<size_t>(u)];
        }

    // Preference lists: domain units (least wanted by others first, then core
    // order), then the other units by nearness (same NUMA node, same package,
    // the rest), least wanted first, then core order.
    std::vector<std::vector<int>> dom_list(nclasses), spill_list(nclasses);
    std::vector<std::vector<int>> level(nclasses, std::vector<int>(static_cast<size_t>(nunits), 0));
    for (size_t c = 0; c < nclasses; ++c) {
        std::vector<int> numas, packages;
        for (const auto& n : node.numa_nodes)
            if (n.cpus.intersects(class_domain[c])) numas.push_back(n.os_index);
        for (const auto& p : node.packages)
            if (p.cpus.intersects(class_domain[c])) packages.push_back(p.os_index);
        auto has = [](const std::vector<int>& v, int x) { return x >= 0 && std::find(v.begin(), v.end(), x) != v.end(); };
        for (int u = 0; u < nunits; ++u) {
            const Unit& un = units[static_cast<size_t>(u)];
            int lv = in_domain[c][static_cast<size_t>(u)] ? 0 : has(numas, un.numa) ? 1 : has(packages, un.package) ? 2 : 3;
            level[c][static_cast<size_t>(u)] = lv;
            (lv == 0 ? dom_list[c] : spill_list[c]).push_back(u);
        }
        auto by_pref = [&](int a, int b) {
            return std::make_tuple(level[c][static_cast<size_t>(a)], wanted_by[static_cast<size_t>(a)], a) <
                   std::make_tuple(level[c][static_cast<size_t>(b)], wanted_by[static_cast<size_t>(b)], b);
        };
        std::sort(dom_list[c].begin(), dom_list[c].end(), by_pref);
        std::sort(spill_list[c].begin(), spill_list[c].end(), by_pref);
    }

    std::vector<int> owner(static_cast<size_t>(nunits), -1);
    std::vector<std::vector<int>> owned(static_cast<size_t>(ntasks));

    if (nunits < ntasks) {
        // Tasks must share: each gets the nearest unit used by the fewest tasks.
        std::vector<int> uses(static_cast<size_t>(nunits), 0);
        for (int t = 0; t < ntasks; ++t) {
            size_t c = static_cast<size_t>(class_of[static_cast<size_t>(t)]);
            int best = -1;
            for (const auto* list : {&dom_list[c], &spill_list[c]})
                for (int u : *list)
                    if (best < 0 || uses[static_cast<size_t>(u)] < uses[static_cast<size_t>(best)]) best = u;
            ++uses[static_cast<size_t>(best)];
            owned[static_cast<size_t>(t)].push_back(best);
        }
        notes.push_back("fewer CPU cores (" + std::to_string(nunits) + ") than tasks (" + std::to_string(ntasks) +
                        "): tasks share cores, one core each");
    } else {
        const int spill_cap = (nunits + ntasks - 1) / ntasks;
        std::vector<bool> spill(static_cast<size_t>(ntasks), false);
        std::vector<int> cap(static_cast<size_t>(ntasks), nunits);
        std::vector<size_t> pos_dom(static_cast<size_t>(ntasks), 0), pos_spill(static_cast<size_t>(ntasks), 0);
        std::vector<int> spilled;
        for (size_t c = 0; c < nclasses; ++c)
            if (dom_list[c].size() < class_tasks[c].size())
                for (int t : class_tasks[c]) {
                    spill[static_cast<size_t>(t)] = true;
                    cap[static_cast<size_t>(t)] = spill_cap;
                }
        auto next_free = [&](const std::vector<int>& list, size_t& pos) {
            while (pos < list.size() && owner[static_cast<size_t>(list[pos])] >= 0) ++pos;
            return pos < list.size() ? list[pos] : -1;
        };
        bool progress = true;
        while (progress) {
            progress = false;
            for (int t = 0; t < ntasks; ++t) {
                size_t ts = static_cast<size_t>(t);
                if (static_cast<int>(owned[ts].size()) >= cap[ts]) continue;
                size_t c = static_cast<size_t>(class_of[ts]);
                int u = next_free(dom_list[c], pos_dom[ts]);
                if (u < 0 && !spill[ts] && owned[ts].empty()) {
                    spill[ts] = true;  // its domain ran out before it got anything
                    cap[ts] = spill_cap;
                }
                if (u < 0 && spill[ts]) u = next_free(spill_list[c], pos_spill[ts]);
                if (u < 0) continue;
                owner[static_cast<size_t>(u)] = t;
                owned[ts].push_back(u);
                progress = true;
            }
        }
        for (int t = 0; t < ntasks; ++t) {
            size_t c = static_cast<size_t>(class_of[static_cast<size_t>(t)]);
            bool outside = false;
            for (int u : owned[static_cast<size_t>(t)]) outside = outside || level[c][static_cast<size_t>(u)] > 0;
            if (outside) spilled.push_back(t);
        }
        // Lay each class's units out again as contiguous blocks: domain units
        // in core order first, then the spilled ones by nearness.
        for (size_t c = 0; c < nclasses; ++c) {
            std::vector<int> pool;
            for (int t : class_tasks[c]) pool.insert(pool.end(), owned[static_cast<size_t>(t)].begin(), owned[static_cast<size_t>(t)].end());
            std::sort(pool.begin(), pool.end(), [&](int a, int b) {
                return std::make_pair(level[c][static_cast<size_t>(a)], a) < std::make_pair(level[c][static_cast<size_t>(b)], b);
            });
            size_t at = 0;
            for (int t : class_tasks[c]) {
                size_t cnt = owned[static_cast<size_t>(t)].size();
                owned[static_cast<size_t>(t)].assign(pool.begin() + static_cast<long>(at), pool.begin() + static_cast<long>(at + cnt));
                at += cnt;
            }
        }
        // Tasks of different classes that spilled into the same NUMA node got
        // its units interleaved: lay out again, as contiguous blocks in task
        // order, every set of units that no task can tell apart (same NUMA
        // node, same nearness level for every class).
        std::map<std::vector<int>, std::vector<int>> alike;  // key -> units (core order)
        for (int u = 0; u < nunits; ++u) {
            if (owner[static_cast<size_t>(u)] < 0) continue;
            std::vector<int> key{units[static_cast<size_t>(u)].numa};
            for (size_t c = 0; c < nclasses; ++c) key.push_back(level[c][static_cast<size_t>(u)]);
            alike[key].push_back(u);
        }
        std::vector<int> holder(static_cast<size_t>(nunits), -1);
        for (int t = 0; t < ntasks; ++t)
            for (int u : owned[static_cast<size_t>(t)]) holder[static_cast<size_t>(u)] = t;
        for (const auto& [key, pool] : alike) {
            std::map<int, int> count;  // task -> units held in this set (task order)
            for (int u : pool) ++count[holder[static_cast<size_t>(u)]];
            if (count.size() < 2) continue;
            size_t at = 0;
            for (const auto& [t, cnt] : count)
                for (int k = 0; k < cnt; ++k) holder[static_cast<size_t>(pool[at++])] = t;
        }
        for (auto& o : owned) o.clear();
        for (int u = 0; u < nunits; ++u)
            if (holder[static_cast<size_t>(u)] >= 0) owned[static_cast<size_t>(holder[static_cast<size_t>(u)])].push_back(u);
        if (!spilled.empty())
            notes.push_back("tasks " + task_list(spilled) +
                            ": not enough allowed cores local to their GPUs; they also use the nearest other cores");
    }

    for (int t = 0; t < ntasks; ++t) {
        TaskCpus& tc = out[static_cast<size_t>(t)];
        for (int u : owned[static_cast<size_t>(t)]) {
            const Unit& un = units[static_cast<size_t>(u)];
            tc.cpus |= un.pus;
            if (un.numa >= 0 && std::find(tc.mems.begin(), tc.mems.end(), un.numa) == tc.mems.end())
                tc.mems.push_back(un.numa);
        }
        std::sort(tc.mems.begin(), tc.mems.end());
    }
    return out;
}

}  // namespace gputopo
