// Planner rules 1-6 as properties on every shipped topology, checked by an
// independent checker written here (brute-force optimal grouping, CPU
// disjointness / locality / balance / whole cores, nearest and balanced NICs,
// island contiguity, determinism). A file that does not load is skipped with
// its reason logged.
#include <catch2/catch.hpp>

#include <algorithm>
#include <dirent.h>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "topo/core/distance.hpp"
#include "topo/plan/islands.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/topology_loader.hpp"

using gputopo::CpuSet;
using gputopo::Mode;
using gputopo::Node;
using gputopo::Plan;
using gputopo::PlanRequest;

namespace {

std::vector<std::string> fixture_files() { return gputopo_test::topology_files(); }

struct Loaded {
    std::string path;
    Node node;
};

const std::vector<Loaded>& loaded_fixtures() {
    static std::vector<Loaded> all = [] {
        std::vector<Loaded> v;
        for (const auto& f : fixture_files()) {
            try {
                v.push_back({f, gputopo::load_topology_file(f)});
            } catch (const std::exception& e) {
                WARN("skipping " << f << ": " << e.what());
            }
        }
        return v;
    }();
    return all;
}

int rank(const Node& n, int a, int b) { return gputopo::gpu_gpu_path(n, a, b).rank(); }

// (worst, sum) of a grouping, over pairs inside groups.
std::pair<int, long> grouping_cost(const Node& n, const std::vector<std::vector<int>>& groups) {
    int worst = 0;
    long sum = 0;
    for (const auto& g : groups)
        for (size_t i = 0; i < g.size(); ++i)
            for (size_t j = i + 1; j < g.size(); ++j) {
                int r = rank(n, g[i], g[j]);
                worst = std::max(worst, r);
                sum += r;
            }
    return {worst, sum};
}

// Brute force: the best (worst, sum) over all partitions of `gpus` into
// groups of `size`.
std::pair<int, long> brute_force_best(const Node& n, const std::vector<int>& gpus, int size) {
    std::pair<int, long> best{1 << 30, 0};
    std::vector<std::vector<int>> groups;
    std::vector<bool> used(gpus.size(), false);
    std::function<void()> rec = [&]() {
        size_t first = 0;
        while (first < gpus.size() && used[first]) ++first;
        if (first == gpus.size()) {
            best = std::min(best, grouping_cost(n, groups));
            return;
        }
        used[first] = true;
        std::vector<int> g{gpus[first]};
        std::function<void(size_t)> pick = [&](size_t from) {
            if (static_cast<int>(g.size()) == size) {
                groups.push_back(g);
                rec();
                groups.pop_back();
                return;
            }
            for (size_t j = from; j < gpus.size(); ++j) {
                if (used[j]) continue;
                used[j] = true;
                g.push_back(gpus[j]);
                pick(j + 1);
                g.pop_back();
                used[j] = false;
            }
        };
        pick(first + 1);
        used[first] = false;
    };
    rec();
    return best;
}

std::set<int> numa_of_cpus(const Node& n, const CpuSet& cpus) {
    std::set<int> s;
    for (const auto& nn : n.numa_nodes)
        if (nn.cpus.intersects(cpus)) s.insert(nn.os_index);
    return s;
}

// Allowed cores ("units"): whole cores, or PUs when the model has no cores.
std::vector<CpuSet> units_of(const Node& n, const CpuSet& allowed) {
    std::vector<CpuSet> u;
    if (!n.cores.empty()) {
        for (const auto& c : n.cores)
            if (c.pus.intersects(allowed)) u.push_back(c.pus & allowed);
    } else {
        for (int pu : (n.cpus & allowed).to_vector()) u.push_back(CpuSet::range(pu, pu));
    }
    return u;
}

int units_in(const std::vector<CpuSet>& units, const CpuSet& cpus) {
    int k = 0;
    for (const auto& u : units)
        if (cpus.contains(u)) ++k;
    return k;
}

std::vector<size_t> nearest_nics(const Node& n, int gpu) {
    std::vector<size_t> best;
    int br = 0;
    for (size_t i = 0; i < n.nics.size(); ++i) {
        if (!n.nics[i].usable()) continue;
        int r = gputopo::gpu_nic_path(n, gpu, i).rank();
        if (best.empty() || r < br) {
            best = {i};
            br = r;
        } else if (r == br) {
            best.push_back(i);
        }
    }
    return best;
}

bool same_plan(const Plan& a, const Plan& b) {
    if (a.tasks.size() != b.tasks.size() || a.node_nics != b.node_nics) return false;
    for (size_t t = 0; t < a.tasks.size(); ++t) {
        const auto &x = a.tasks[t], &y = b.tasks[t];
        if (x.gpus != y.gpus || x.cpus != y.cpus || x.mems != y.mems || x.nics != y.nics || x.island != y.island)
            return false;
    }
    return true;
}

std::string describe(const std::string& path, const std::vector<int>& gpus, int ntasks, Mode m) {
    std::ostringstream o;
    o << path.substr(path.rfind('/') + 1) << " gpus=";
    for (size_t i = 0; i < gpus.size(); ++i) o << (i ? "," : "") << gpus[i];
    o << " ntasks=" << ntasks << " mode=" << gputopo::mode_name(m);
    return o.str();
}

int g_checked = 0;

// Checks rules 1-6 for one request whose tasks divide the allocation.
void check_plan(const Node& n, const std::string& path, std::vector<int> gpus, int ntasks, Mode mode) {
    INFO(describe(path, gpus, ntasks, mode));
    ++g_checked;
    PlanRequest req;
    req.gpus = gpus;
    req.ntasks = ntasks;
    req.mode = mode;
    Plan p = gputopo::make_plan(n, req);
    REQUIRE(p.tasks.size() == static_cast<size_t>(ntasks));
    const int per = static_cast<int>(gpus.size()) / ntasks;

    // Rule 1: every allocated GPU exactly once, per-task counts equal.
    std::vector<int> used;
    std::vector<std::vector<int>> groups;
    for (size_t t = 0; t < p.tasks.size(); ++t) {
        CHECK(p.tasks[t].task == static_cast<int>(t));
        CHECK(static_cast<int>(p.tasks[t].gpus.size()) == per);
        used.insert(used.end(), p.tasks[t].gpus.begin(), p.tasks[t].gpus.end());
        groups.push_back(p.tasks[t].gpus);
        CHECK(p.tasks[t].gpu_pci.size() == p.tasks[t].gpus.size());
    }
    std::sort(used.begin(), used.end());
    std::vector<int> sorted = gpus;
    std::sort(sorted.begin(), sorted.end());
    CHECK(used == sorted);

    // Rule 2: the grouping is optimal (brute force where affordable).
    if (per > 1 && gpus.size() <= 12) CHECK(grouping_cost(n, groups) == brute_force_best(n, sorted, per));

    // Rule 3.
    CpuSet allowed = n.cpus;
    std::vector<CpuSet> units = units_of(n, allowed);
    if (!units.empty() && static_cast<int>(units.size()) >= ntasks) {
        CpuSet seen;
        std::map<std::string, std::vector<size_t>> classes;  // domain -> tasks
        std::vector<CpuSet> domain(p.tasks.size());
        for (size_t t = 0; t < p.tasks.size(); ++t) {
            const auto& b = p.tasks[t];
            CHECK_FALSE(b.cpus.empty());
            CHECK_FALSE(seen.intersects(b.cpus));  // disjoint
            seen |= b.cpus;
            for (const auto& c : n.cores)           // SMT siblings together
                if (c.pus.intersects(b.cpus)) CHECK(b.cpus.contains(c.pus & allowed));
            std::set<int> mems(b.mems.begin(), b.mems.end());
            CHECK(mems == numa_of_cpus(n, b.cpus));
            bool known = true;
            for (int g : b.gpus) {
                if (n.gpus[static_cast<size_t>(g)].local_cpus.empty()) known = false;
                domain[t] |= n.gpus[static_cast<size_t>(g)].local_cpus;
            }
            if (known) classes[domain[t].to_list()].push_back(t);
        }
        // Classes whose domain overlaps no other class's: when the domain has
        // a core per task, the tasks stay inside, use all of it, balanced.
        for (const auto& [key, tasks] : classes) {
            const CpuSet& d = domain[tasks.front()];
            bool overlaps = false;
            for (const auto& [k2, t2] : classes)
                if (k2 != key && domain[t2.front()].intersects(d)) overlaps = true;
            int have = units_in(units, d);
            if (overlaps || have < static_cast<int>(tasks.size())) continue;
            int lo = 1 << 30, hi = 0, total = 0;
            for (size_t t : tasks) {
                CHECK(d.contains(p.tasks[t].cpus));
                int k = units_in(units, p.tasks[t].cpus);
                lo = std::min(lo, k);
                hi = std::max(hi, k);
                total += k;
            }
            CHECK(hi - lo <= 1);
            CHECK(total == have);
        }
    }

    // Rule 4: first NIC among the nearest usable ones of the first GPU;
    // balanced when every task has one GPU; node_nics = usable NICs in PCI order.
    // PCI order; the ports of one card (same bus id) by name, shorter first (mlx5_9 < mlx5_10).
    std::vector<const gputopo::Nic*> ordered;
    for (const auto& nic : n.nics)
        if (nic.usable()) ordered.push_back(&nic);
    std::stable_sort(ordered.begin(), ordered.end(), [](const gputopo::Nic* a, const gputopo::Nic* b) {
        if (a->pci != b->pci) return a->pci < b->pci;
        if (a->name.size() != b->name.size()) return a->name.size() < b->name.size();
        return a->name < b->name;
    });
    std::vector<std::string> usable;
    for (const auto* nic : ordered)
        if (std::find(usable.begin(), usable.end(), nic->name) == usable.end()) usable.push_back(nic->name);
    CHECK(p.node_nics == usable);
    std::map<std::vector<size_t>, std::vector<std::string>> firsts;  // nearest set -> first NICs
    for (const auto& b : p.tasks) {
        auto near = nearest_nics(n, b.gpus.front());
        if (near.empty()) {
            CHECK(b.nics.empty());
            continue;
        }
        REQUIRE_FALSE(b.nics.empty());
        // The first NIC is as near as any usable NIC gets to any of the task's GPUs.
        int best = 1 << 30, first_rank = 1 << 30;
        for (int g : b.gpus)
            for (size_t i = 0; i < n.nics.size(); ++i) {
                if (!n.nics[i].usable()) continue;
                int r = gputopo::gpu_nic_path(n, g, i).rank();
                best = std::min(best, r);
                if (n.nics[i].name == b.nics.front()) first_rank = std::min(first_rank, r);
            }
        CHECK(first_rank == best);
        firsts[near].push_back(b.nics.front());
    }
    if (per == 1) {
        for (const auto& [near, names] : firsts) {
            bool shared = false;  // another set overlapping this one
            for (const auto& [n2, x] : firsts)
                if (n2 != near)
                    for (size_t i : n2) shared = shared || std::find(near.begin(), near.end(), i) != near.end();
            if (shared) continue;
            std::map<std::string, int> count;
            for (size_t i : near) count[n.nics[i].name] = 0;
            for (const auto& s : names) ++count[s];
            int lo = 1 << 30, hi = 0;
            for (const auto& [name, c] : count) {
                lo = std::min(lo, c);
                hi = std::max(hi, c);
            }
            CHECK(hi - lo <= 1);
        }
    }

    // Rule 5: island ids and order.
    std::vector<int> isl = gputopo::gpu_islands(n);
    std::vector<int> seq;
    for (const auto& b : p.tasks) {
        CHECK(b.island == isl[static_cast<size_t>(b.gpus.front())]);
        seq.push_back(b.island);
    }
    if (mode == Mode::Island) {
        std::set<int> closed;
        for (size_t t = 0; t < seq.size(); ++t) {
            if (t > 0 && seq[t] != seq[t - 1]) closed.insert(seq[t - 1]);
            CHECK(closed.count(seq[t]) == 0);  // each island one consecutive run
        }
    } else {
        for (size_t t = 1; t < p.tasks.size(); ++t) CHECK(p.tasks[t - 1].gpus.front() < p.tasks[t].gpus.front());
    }

    // Rule 6: planning again, or with the allocation in another order, gives the same plan.
    CHECK(same_plan(p, gputopo::make_plan(n, req)));
    std::reverse(req.gpus.begin(), req.gpus.end());
    CHECK(same_plan(p, gputopo::make_plan(n, req)));
}

std::vector<std::vector<int>> subsets(int n, int k) {
    std::vector<std::vector<int>> out;
    std::vector<int> cur;
    std::function<void(int)> rec = [&](int from) {
        if (static_cast<int>(cur.size()) == k) {
            out.push_back(cur);
            return;
        }
        for (int i = from; i < n; ++i) {
            cur.push_back(i);
            rec(i + 1);
            cur.pop_back();
        }
    };
    rec(0);
    return out;
}

}  // namespace

TEST_CASE("planner properties on every fixture: whole node, every dividing task count", "[planner]") {
    REQUIRE(loaded_fixtures().size() >= 30);  // 39 files, a few are not topologies
    for (const auto& f : loaded_fixtures()) {
        const int n = static_cast<int>(f.node.gpus.size());
        std::vector<int> all;
        for (int i = 0; i < n; ++i) all.push_back(i);
        for (int t = 1; t <= n; ++t)
            if (n % t == 0)
                for (Mode m : {Mode::Closest, Mode::Island}) check_plan(f.node, f.path, all, t, m);
    }
}

TEST_CASE("planner properties on every fixture: partial allocations", "[planner]") {
    for (const auto& f : loaded_fixtures()) {
        const int n = static_cast<int>(f.node.gpus.size());
        std::vector<std::vector<int>> allocs;
        if (n <= 8) {
            allocs = subsets(n, 2);
            if (n >= 4)
                for (auto& s : subsets(n, 4)) allocs.push_back(s);
        } else {
            // A few deterministic subsets: first half, odd GPUs, every third, last four.
            std::vector<int> half, odd, third, last4;
            for (int i = 0; i < n; ++i) {
                if (i < n / 2) half.push_back(i);
                if (i % 2) odd.push_back(i);
                if (i % 3 == 0) third.push_back(i);
                if (i >= n - 4) last4.push_back(i);
            }
            allocs = {half, odd, third, last4};
        }
        for (const auto& a : allocs) {
            const int k = static_cast<int>(a.size());
            for (int t = 1; t <= k; ++t)
                if (k % t == 0)
                    for (Mode m : {Mode::Closest, Mode::Island}) check_plan(f.node, f.path, a, t, m);
        }
    }
    WARN("planner property checks run: " << g_checked);
}

TEST_CASE("planner on every fixture: uneven and over-subscribed requests give sensible plans", "[planner]") {
    for (const auto& f : loaded_fixtures()) {
        const int n = static_cast<int>(f.node.gpus.size());
        std::vector<int> all;
        for (int i = 0; i < n; ++i) all.push_back(i);
        for (int ntasks : {3, 5, 2 * n, n + 1}) {
            INFO(describe(f.path, all, ntasks, Mode::Closest));
            PlanRequest r;
            r.gpus = all;
            r.ntasks = ntasks;
            Plan p = gputopo::make_plan(f.node, r);
            REQUIRE(p.tasks.size() == static_cast<size_t>(ntasks));
            std::set<int> covered;
            for (const auto& b : p.tasks) {
                CHECK_FALSE(b.gpus.empty());
                covered.insert(b.gpus.begin(), b.gpus.end());
            }
            CHECK(static_cast<int>(covered.size()) == n);  // every GPU used
            if (ntasks > n) {
                CHECK_FALSE(p.notes.empty());
                for (size_t t = 1; t < p.tasks.size(); ++t)  // neighbours share
                    CHECK(p.tasks[t - 1].gpus.front() <= p.tasks[t].gpus.front());
            }
            std::vector<CpuSet> units = units_of(f.node, f.node.cpus);
            if (static_cast<int>(units.size()) >= ntasks) {
                CpuSet seen;
                for (const auto& b : p.tasks) {
                    CHECK_FALSE(b.cpus.empty());
                    CHECK_FALSE(seen.intersects(b.cpus));
                    seen |= b.cpus;
                }
            }
        }
    }
}
