// Node snapshots with damaged indices are refused when read (issue 12,
// finding 2): before, a GPU naming a PCI object out of range passed
// read_node_snapshot and topo/core/distance.cpp then called back() on an empty
// ancestor chain (abort under _GLIBCXX_ASSERTIONS).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "topo/core/errors.hpp"
#include "topo/plan/planner.hpp"
#include "topo/sources/node_snapshot.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;
using gputopo::read_node_snapshot;
using gputopo::write_node_snapshot;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// `text` with field `field` (0 = the tag) of the `nth` line tagged `tag` set to `value`.
std::string set_field(const std::string& text, const std::string& tag, size_t nth, size_t field, const std::string& value) {
    std::string out;
    size_t seen = 0;
    bool done = false;
    for (const std::string& l : lines_of(text)) {
        std::vector<std::string> f;
        std::string cur;
        for (char c : l) {
            if (c == '\t') {
                f.push_back(cur);
                cur.clear();
            } else {
                cur += c;
            }
        }
        f.push_back(cur);
        if (!done && f[0] == tag && seen++ == nth) {
            REQUIRE(field < f.size());
            f[field] = value;
            done = true;
        }
        for (size_t i = 0; i < f.size(); ++i) out += (i ? "\t" : "") + f[i];
        out += '\n';
    }
    REQUIRE(done);
    return out;
}

size_t count_tag(const std::string& text, const std::string& tag) {
    size_t n = 0;
    for (const std::string& l : lines_of(text)) n += l.rfind(tag + "\t", 0) == 0;
    return n;
}

}  // namespace

TEST_CASE("node snapshot: every damaged index is refused when read, naming the record", "[spank][snapshot]") {
    // A node with PCI tree, NUMA nodes, cores, NICs and NVLink links.
    const Node node = load_topology_file(
        gputopo_test::topology("hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    const std::string text = write_node_snapshot(node);
    REQUIRE_NOTHROW(read_node_snapshot(text, "good.snap"));
    const std::string npci = std::to_string(count_tag(text, "pci"));
    const std::string ngpu = std::to_string(count_tag(text, "gpu"));
    REQUIRE(count_tag(text, "link") > 0);
    REQUIRE(count_tag(text, "core") > 0);
    struct Case {
        std::string damaged, what;
    };
    // Field positions follow write_node_snapshot: gpu 5 = pci_object, 6 = numa,
    // 1 = index, 2 = vendor; pci 1 = kind, 2 = parent, 8 = numa; nic 4 = pci_object;
    // link 1 = a, 2 = b, 3 = kind; core 1 = package, 2 = numa.
    const std::vector<Case> cases{
        {set_field(text, "gpu", 0, 5, npci), "gpu 0: PCI object out of range"},
        {set_field(text, "gpu", 1, 5, "-7"), "gpu 1: PCI object out of range"},
        {set_field(text, "gpu", 0, 6, "999"), "gpu 0: names a NUMA node"},
        {set_field(text, "gpu", 2, 1, "0"), "gpu 2: index is not its position"},
        {set_field(text, "gpu", 0, 2, "9"), "gpu 0: unknown vendor"},
        {set_field(text, "pci", 3, 2, "3"), "pci 3: parent is not an earlier PCI object"},
        {set_field(text, "pci", 0, 2, npci), "pci 0: parent is not an earlier PCI object"},
        {set_field(text, "pci", 0, 1, "7"), "pci 0: unknown kind"},
        {set_field(text, "pci", 0, 8, "4242"), "pci 0: names a NUMA node"},
        {set_field(text, "nic", 0, 4, npci), "nic 0: PCI object out of range"},
        {set_field(text, "link", 0, 2, ngpu), "link 0: GPU indices out of range"},
        {set_field(text, "link", 0, 1, "-1"), "link 0: GPU indices out of range"},
        {set_field(text, "link", 0, 3, "5"), "link 0: unknown kind"},
        {set_field(text, "core", 0, 1, "77"), "core 0: names a package"},
        {set_field(text, "core", 0, 2, "77"), "core 0: names a NUMA node"},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        CHECK_THROWS_WITH(read_node_snapshot(c.damaged, "damaged.snap"),
                          Catch::Contains("damaged.snap is not a gputopo node snapshot") && Catch::Contains(c.what));
    }
}

TEST_CASE("node snapshot: a number field is a whole number, nothing around it", "[spank][snapshot]") {
    const Node node = load_topology_file(
        gputopo_test::topology("hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    const std::string text = write_node_snapshot(node);
    // What was written reads back to the same snapshot.
    CHECK(write_node_snapshot(read_node_snapshot(text, "good.snap")) == text);
    for (const std::string bad : {"3x", " 3", "+3", "", "0x10"}) {
        INFO("gpu pci_object '" << bad << "'");
        CHECK_THROWS_WITH(read_node_snapshot(set_field(text, "gpu", 0, 5, bad), "bad.snap"),
                          Catch::Contains("bad.snap is not a gputopo node snapshot") && Catch::Contains("line "));
    }
}

TEST_CASE("node snapshot: the refused damage is what crashed the planner before", "[spank][snapshot]") {
    // Guards the test above: a snapshot whose GPU names a PCI object past the
    // end must not reach the planner; the undamaged one plans every GPU.
    const Node node = load_topology_file(
        gputopo_test::topology("hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    const std::string text = write_node_snapshot(node);
    Node back = read_node_snapshot(text, "good.snap");
    PlanRequest r;
    for (const Gpu& g : back.gpus) r.gpus.push_back(g.index);
    r.ntasks = static_cast<int>(r.gpus.size());
    CHECK(make_plan(back, r).tasks.size() == back.gpus.size());
    CHECK_THROWS_AS(read_node_snapshot(set_field(text, "gpu", 0, 5, std::to_string(count_tag(text, "pci") + 5)), "x"),
                    TopologyError);
}
