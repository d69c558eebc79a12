// CPU allocation (planner rule 3) against brute force on many pseudo-random
// small nodes (fixed seed) with restricted allowed CPUs: as many tasks as can
// have a CPU local to their GPUs do (a maximum matching of tasks to allowed
// local cores, found here by trying every assignment). Also the two policies
// for more tasks than local cores: hardware threads (default) and whole cores.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "tests/unit/model_builder.hpp"
#include "topo/plan/cpu_allocation.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/topology_loader.hpp"

using gputopo::CpuSet;
using gputopo::Node;
using gputopo::TaskCpus;
using gputopo_test::NodeBuilder;

namespace {

struct Lcg {
    uint32_t s;
    int next(int mod) {
        s = s * 1664525u + 1013904223u;
        return static_cast<int>((s >> 8) % static_cast<uint32_t>(mod));
    }
};

// The most tasks that can each get a distinct unit inside their domain.
int brute_force_local(const std::vector<CpuSet>& domains, const std::vector<CpuSet>& units) {
    std::vector<bool> used(units.size(), false);
    int best = 0;
    std::function<void(size_t, int)> rec = [&](size_t t, int have) {
        if (have + static_cast<int>(domains.size() - t) <= best) return;
        if (t == domains.size()) {
            best = have;
            return;
        }
        for (size_t u = 0; u < units.size(); ++u)
            if (!used[u] && domains[t].contains(units[u])) {
                used[u] = true;
                rec(t + 1, have + 1);
                used[u] = false;
            }
        rec(t + 1, have);
    };
    rec(0, 0);
    return best;
}

// The same number by the deficiency form of Hall's theorem: tasks minus the
// largest |S| - |units local to some task of S| over all task subsets S.
int hall_local(const std::vector<CpuSet>& domains, const std::vector<CpuSet>& units) {
    // Adding a task whose domain is already in S raises |S| and leaves the
    // reach alone, so the worst S holds every task of each domain it touches:
    // 2^(distinct domains) subsets to try, not 2^tasks.
    std::vector<CpuSet> distinct;
    std::vector<int> count;
    for (const auto& d : domains) {
        const auto it = std::find(distinct.begin(), distinct.end(), d);
        if (it == distinct.end()) {
            distinct.push_back(d);
            count.push_back(1);
        } else {
            ++count[static_cast<size_t>(it - distinct.begin())];
        }
    }
    const size_t nd = distinct.size();
    int worst = 0;
    for (uint32_t s = 1; s < (1u << nd); ++s) {
        CpuSet reach;
        int size = 0;
        for (size_t t = 0; t < nd; ++t)
            if (s & (1u << t)) {
                reach |= distinct[t];
                size += count[t];
            }
        int near = 0;
        for (const auto& u : units) near += reach.contains(u) ? 1 : 0;
        worst = std::max(worst, size - near);
    }
    return static_cast<int>(domains.size()) - worst;
}

int local_tasks(const std::vector<CpuSet>& domains, const std::vector<TaskCpus>& got) {
    int k = 0;
    for (size_t t = 0; t < domains.size(); ++t)
        if (got[t].cpus.intersects(domains[t])) ++k;
    return k;
}

bool whole_cores(const Node& n, const CpuSet& allowed, const CpuSet& cpus) {
    for (const auto& c : n.cores)
        if (c.pus.intersects(cpus) && !cpus.contains(c.pus & allowed)) return false;
    return true;
}

struct Case {
    Node node;
    std::vector<CpuSet> domains;
    CpuSet allowed;
};

Case random_case(Lcg& rng) {
    const int smt = 1 + rng.next(2), nnuma = 2 + rng.next(3);
    NodeBuilder b(smt);
    for (int i = 0; i < nnuma; ++i) b.numa(i, i * 2 / nnuma, 1 + rng.next(2));
    Case c;
    c.node = b.build();
    const auto& numa = c.node.numa_nodes;
    const int ntasks = 1 + rng.next(5);
    for (int t = 0; t < ntasks; ++t) {
        CpuSet d = numa[static_cast<size_t>(rng.next(nnuma))].cpus;
        if (rng.next(3) == 0) d |= numa[static_cast<size_t>(rng.next(nnuma))].cpus;  // GPUs on two NUMA nodes
        c.domains.push_back(d);
    }
    for (int pu : c.node.cpus.to_vector())
        if (rng.next(3) != 0) c.allowed.set(pu);
    return c;
}

std::string describe(const Case& c) {
    std::string s = "cores " + std::to_string(c.node.cores.size()) + " allowed " + c.allowed.to_list() + " domains";
    for (const auto& d : c.domains) s += " [" + d.to_list() + "]";
    return s;
}

}  // namespace

TEST_CASE("CPU allocation: every task that can be local is, compared with brute force", "[planner]") {
    Lcg rng{20261201};
    int cases = 0, scarce = 0;
    for (int round = 0; round < 600; ++round) {
        Case c = random_case(rng);
        INFO("case " << round << ": " << describe(c));
        const int ntasks = static_cast<int>(c.domains.size());
        const std::vector<CpuSet> cores = gputopo_test::allowed_units(c.node, c.allowed, false);
        const int best = brute_force_local(c.domains, cores);
        CHECK(hall_local(c.domains, cores) == best);
        if (best < ntasks) ++scarce;
        std::vector<std::string> notes;

        // Whole cores: exactly the brute-force optimum; disjoint whole cores when there are enough.
        auto got = gputopo::allocate_cpus(c.node, c.domains, c.allowed, true, notes);
        REQUIRE(got.size() == c.domains.size());
        if (!cores.empty() && static_cast<int>(cores.size()) >= ntasks) {
            CHECK(local_tasks(c.domains, got) == best);
            CpuSet seen;
            for (const auto& g : got) {
                CHECK_FALSE(g.cpus.empty());
                CHECK(c.allowed.contains(g.cpus));
                CHECK_FALSE(seen.intersects(g.cpus));
                CHECK(whole_cores(c.node, c.allowed, g.cpus));
                seen |= g.cpus;
            }
        }

        // Hardware threads: at least as many local tasks as with whole cores,
        // at most as many as single PUs allow; still disjoint.
        auto threads = gputopo::allocate_cpus(c.node, c.domains, c.allowed, false, notes);
        if (!cores.empty() && static_cast<int>(cores.size()) >= ntasks) {
            const int local = local_tasks(c.domains, threads);
            CHECK(local >= best);
            CHECK(local <= brute_force_local(c.domains, gputopo_test::allowed_units(c.node, c.allowed, true)));
            CpuSet seen;
            for (const auto& g : threads) {
                CHECK_FALSE(g.cpus.empty());
                CHECK(c.allowed.contains(g.cpus));
                CHECK_FALSE(seen.intersects(g.cpus));
                seen |= g.cpus;
            }
        }
        ++cases;
    }
    CHECK(cases == 600);
    CHECK(scarce > 100);  // the seed gives many nodes where not every task can be local
    WARN("CPU allocation compared with brute force: " << cases << " cases, " << scarce
                                                      << " where not every task can be local");
}

TEST_CASE("CPU allocation: a task on two NUMA nodes leaves the one-node tasks their local cores", "[planner]") {
    // NUMA 0 has one allowed core, NUMA 1 two. Task 0's GPUs span both; task 1
    // is on NUMA 1, task 2 on NUMA 0. All three can be local only if task 0
    // takes a NUMA 1 core.
    NodeBuilder b(1);
    b.numa(0, 0, 2).numa(1, 1, 2);
    Node n = b.build();
    const CpuSet numa0 = n.numa_nodes[0].cpus, numa1 = n.numa_nodes[1].cpus;
    std::vector<std::string> notes;
    auto got = gputopo::allocate_cpus(n, {numa0 | numa1, numa1, numa0}, CpuSet::parse_list("0,2-3"), true, notes);
    CHECK(got[0].cpus.to_list() == "2");
    CHECK(got[1].cpus.to_list() == "3");
    CHECK(got[2].cpus.to_list() == "0");
    CHECK(notes.empty());
}

TEST_CASE("CPU allocation: more tasks than local cores use hardware threads, or whole cores elsewhere", "[planner]") {
    // NUMA 0: 2 cores x 2 threads (PUs 0,4 and 1,5); NUMA 1 the same (2,6 and 3,7).
    NodeBuilder b(2);
    b.numa(0, 0, 2).numa(1, 1, 2);
    Node n = b.build();
    const CpuSet numa0 = n.numa_nodes[0].cpus;
    std::vector<CpuSet> domains(3, numa0);
    std::vector<std::string> notes;
    // Default: the three tasks stay on NUMA 0, on its hardware threads, core by core.
    auto threads = gputopo::allocate_cpus(n, domains, n.cpus, false, notes);
    CHECK(threads[0].cpus.to_list() == "0,4");
    CHECK(threads[1].cpus.to_list() == "1");
    CHECK(threads[2].cpus.to_list() == "5");
    for (const auto& t : threads) CHECK(t.mems == std::vector<int>{0});
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("hardware threads") != std::string::npos);
    // Whole cores: one task spills to the other socket.
    notes.clear();
    auto cores = gputopo::allocate_cpus(n, domains, n.cpus, true, notes);
    int remote = 0;
    for (const auto& t : cores) {
        CHECK(whole_cores(n, n.cpus, t.cpus));
        if (t.mems == std::vector<int>{1}) ++remote;
    }
    CHECK(remote >= 1);
    CHECK_FALSE(notes.empty());
}

TEST_CASE("CPU allocation on the real machines with restricted CPUs: every task that can be local is", "[planner]") {
    Lcg rng{11};
    int checked = 0, scarce = 0;
    for (const auto& rel : gputopo_test::topology_files()) {
        Node n;
        try {
            n = gputopo::load_topology_file(gputopo_test::topology(rel));
        } catch (const std::exception&) {
            continue;  // the loader's rejections are tested elsewhere
        }
        bool known = !n.cores.empty();
        for (const auto& g : n.gpus) known = known && !g.local_cpus.empty();
        if (!known) continue;
        // The step may use every 8th, 12th, 16th or 20th core, or a random
        // tenth, sixth, quarter or third of them: some GPUs' NUMA nodes keep
        // few or no cores.
        std::vector<CpuSet> restrictions;
        for (size_t k = 8; k <= 20; k += 4) {
            CpuSet a;
            for (size_t i = 0; i < n.cores.size(); i += k) a |= n.cores[i].pus;
            restrictions.push_back(a);
        }
        for (int mod : {10, 4, 10, 4, 6, 3, 6, 3}) {
            CpuSet a;
            for (const auto& c : n.cores)
                if (rng.next(mod) == 0) a |= c.pus;
            restrictions.push_back(a);
        }
        for (int per_gpu : {1, 2}) {
            std::vector<CpuSet> domains;
            for (const auto& g : n.gpus)
                for (int k = 0; k < per_gpu; ++k) domains.push_back(g.local_cpus);
            if (domains.size() > 16) continue;  // the cases checked before hall_local grouped domains
            for (const auto& allowed : restrictions) {
                const std::vector<CpuSet> cores = gputopo_test::allowed_units(n, allowed, false);
                if (cores.size() < domains.size()) continue;
                INFO(rel << ", " << per_gpu << " task(s) per GPU, allowed CPUs " << allowed.to_list());
                const int best = hall_local(domains, cores);
                if (best < static_cast<int>(domains.size())) ++scarce;
                std::vector<std::string> notes;
                CHECK(local_tasks(domains, gputopo::allocate_cpus(n, domains, allowed, true, notes)) == best);
                CHECK(local_tasks(domains, gputopo::allocate_cpus(n, domains, allowed, false, notes)) >= best);
                ++checked;
            }
        }
    }
    CHECK(checked >= 100);
    CHECK(scarce >= 10);
    WARN("CPU allocation on the real machines with restricted CPUs: " << checked << " cases, " << scarce
                                                                       << " where not every task can be local");
}
