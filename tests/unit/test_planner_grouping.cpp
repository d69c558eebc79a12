// The exact GPU grouping against brute force on many pseudo-random synthetic
// nodes (fixed seed): equal groups, groups of two sizes, and groups that leave
// GPUs unused. Scores are recomputed here from distance.hpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <tuple>
#include <vector>

#include "tests/unit/model_builder.hpp"
#include "topo/core/distance.hpp"
#include "topo/plan/gpu_grouping.hpp"

using gputopo::GroupKind;
using gputopo::Node;
using gputopo_test::NodeBuilder;

namespace {

using Score = std::tuple<int, long, long>;  // worst, sum, PCIe tie-break

struct Lcg {
    uint32_t s;
    uint32_t next(uint32_t mod) {
        s = s * 1664525u + 1013904223u;
        return (s >> 8) % mod;
    }
};

Node random_node(Lcg& rng, int ngpus) {
    NodeBuilder b(1);
    b.numa(0, 0, 2).numa(1, 1, 2);
    int hb[2] = {b.host_bridge(0), b.host_bridge(1)};
    int sw[4] = {b.bridge(hb[0]), b.bridge(hb[0]), b.bridge(hb[1]), b.bridge(hb[1])};
    for (int g = 0; g < ngpus; ++g) {
        int where = static_cast<int>(rng.next(6));
        int parent = where < 4 ? sw[where] : hb[where - 4];
        b.gpu(parent, static_cast<unsigned>(0x10 + g));
    }
    for (int a = 0; a < ngpus; ++a)
        for (int c = a + 1; c < ngpus; ++c) {
            int links = static_cast<int>(rng.next(5)) - 1;  // -1..3, <= 0: no link
            if (links > 0) b.link(a, c, links);
        }
    return b.build();
}

Score score(const Node& n, const std::vector<std::vector<int>>& groups) {
    int worst = 0;
    long sum = 0, pci = 0;
    for (const auto& g : groups)
        for (size_t i = 0; i < g.size(); ++i)
            for (size_t j = i + 1; j < g.size(); ++j) {
                int r = gputopo::gpu_gpu_path(n, g[i], g[j]).rank();
                const auto &ga = n.gpus[static_cast<size_t>(g[i])], &gb = n.gpus[static_cast<size_t>(g[j])];
                worst = std::max(worst, r);
                sum += r;
                pci += gputopo::pci_path(n, ga.pci_object, gb.pci_object, ga.numa, gb.numa).rank();
            }
    return {worst, sum, pci};
}

Score brute_force(const Node& n, int ngpus, const std::vector<GroupKind>& kinds) {
    Score best{1 << 30, 0, 0};
    std::vector<bool> used(static_cast<size_t>(ngpus), false);
    std::vector<int> left;
    for (const auto& k : kinds) left.push_back(k.count);
    std::vector<std::vector<int>> costed;
    std::function<void()> rec = [&]() {
        int first = 0;
        while (first < ngpus && used[static_cast<size_t>(first)]) ++first;
        if (first == ngpus) {
            best = std::min(best, score(n, costed));
            return;
        }
        for (size_t k = 0; k < kinds.size(); ++k) {
            if (left[k] == 0) continue;
            --left[k];
            std::vector<int> g{first};
            used[static_cast<size_t>(first)] = true;
            std::function<void(int)> pick = [&](int from) {
                if (static_cast<int>(g.size()) == kinds[k].size) {
                    if (kinds[k].costed) costed.push_back(g);
                    rec();
                    if (kinds[k].costed) costed.pop_back();
                    return;
                }
                for (int j = from; j < ngpus; ++j) {
                    if (used[static_cast<size_t>(j)]) continue;
                    used[static_cast<size_t>(j)] = true;
                    g.push_back(j);
                    pick(j + 1);
                    g.pop_back();
                    used[static_cast<size_t>(j)] = false;
                }
            };
            pick(first + 1);
            used[static_cast<size_t>(first)] = false;
            ++left[k];
        }
    };
    rec();
    return best;
}

}  // namespace

TEST_CASE("exact grouping equals brute force on random nodes", "[planner]") {
    Lcg rng{12345};
    struct Shape {
        int ngpus;
        std::vector<GroupKind> kinds;
    };
    const std::vector<Shape> shapes = {
        {4, {{2, 2, true}}},
        {6, {{2, 3, true}}},
        {6, {{3, 2, true}}},
        {8, {{2, 4, true}}},
        {8, {{4, 2, true}}},
        {9, {{3, 3, true}}},
        {7, {{3, 1, true}, {2, 2, true}}},   // 7 GPUs over 3 tasks
        {8, {{3, 2, true}, {2, 1, true}}},   // 8 GPUs over 3 tasks
        {8, {{2, 3, true}, {2, 1, false}}},  // 3 tasks x 2, 2 GPUs unused
        {7, {{2, 2, true}, {3, 1, false}}},  // 2 tasks x 2, 3 unused
        {10, {{2, 5, true}}},
    };
    int cases = 0;
    for (int round = 0; round < 12; ++round)
        for (const auto& s : shapes) {
            Node n = random_node(rng, s.ngpus);
            std::vector<int> all;
            for (int i = 0; i < s.ngpus; ++i) all.push_back(i);
            auto groups = gputopo::group_gpus(n, all, s.kinds);
            INFO("round " << round << " ngpus " << s.ngpus << " kinds " << s.kinds.size());
            // The right number and sizes of costed groups, disjoint.
            int want_groups = 0;
            for (const auto& k : s.kinds)
                if (k.costed) want_groups += k.count;
            REQUIRE(static_cast<int>(groups.size()) == want_groups);
            std::vector<int> seen;
            for (const auto& g : groups) seen.insert(seen.end(), g.begin(), g.end());
            std::sort(seen.begin(), seen.end());
            CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
            CHECK(score(n, groups) == brute_force(n, s.ngpus, s.kinds));
            ++cases;
        }
    CHECK(cases == 12 * 11);
}

TEST_CASE("grouping is the same whatever order the GPUs come in", "[planner]") {
    Lcg rng{777};
    for (int round = 0; round < 10; ++round) {
        Node n = random_node(rng, 8);
        std::vector<int> fwd{0, 1, 2, 3, 4, 5, 6, 7}, rev{7, 6, 5, 4, 3, 2, 1, 0};
        CHECK(gputopo::group_gpus(n, fwd, {{2, 4, true}}) == gputopo::group_gpus(n, rev, {{2, 4, true}}));
    }
}
