// gputopo labels: islands as Kubernetes node labels with NVIDIA Topograph's
// keys (Topograph docs/engines/k8s.md, commit 01572e39: fabric.topograph.run/
// tier-N closest first, accelerator.topograph.run/domain and sub-domain;
// docs/reference/node-labels.md, commit 03e70a5f: the earlier
// network.topology.nvidia.com/{accelerator,leaf,spine,core} and "Label value
// behavior": values over 63 characters become an x-prefixed FNV-64a hash). Read-back: the labels of every node of the test cluster's
// topology (tests/cluster/harness.sh) group the nodes exactly as the islands
// the plugin orders ranks by.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"
#include "tests/unit/json_parse.hpp"
#include "topo/fabric/island_sources.hpp"
#include "topo/fabric/node_labels.hpp"

using namespace gputopo;

namespace {

// The topology.conf the cluster harness writes for slurmctld (its heredoc).
std::string harness_topology_conf() {
    std::ifstream in(gputopo_test::source_dir() + "/tests/cluster/harness.sh");
    std::string line, out;
    bool inside = false;
    while (std::getline(in, line)) {
        if (line.find("/etc/topology.conf\" <<EOF") != std::string::npos) {
            inside = true;
            continue;
        }
        if (inside && line == "EOF") break;
        if (inside) out += line + "\n";
    }
    REQUIRE_FALSE(out.empty());
    return out;
}

}  // namespace

TEST_CASE("labels: the test cluster's islands read back from the labels", "[labels]") {
    const std::string text = harness_topology_conf();
    IslandMap map;
    parse_slurm_topology(text, "topology.conf", map);
    map.seal();
    auto parents = parse_switch_parents(text, "topology.conf");
    LabelKeys keys;
    Hostlist nodes = Hostlist::parse("n[1-4]");
    std::map<std::string, std::set<std::string>> by_label, by_island;
    for (uint64_t i = 0; i < nodes.count(); ++i) {
        std::string n = nodes.nth(i);
        auto labels = node_labels(map, parents, n, "", keys);
        REQUIRE(labels.count(keys.leaf));
        by_label[labels[keys.leaf]].insert(n);
        size_t id = map.find(n);
        REQUIRE(id != IslandMap::npos);
        by_island[map.island(id).name].insert(n);
        // The spine above every leaf of this fabric.
        CHECK(labels[keys.spine] == parents.at(map.island(id).name));
        CHECK(labels.count(keys.core) == 0);
    }
    CHECK(by_label == by_island);
    CHECK(by_island.size() == 2);
    CHECK(node_labels(map, parents, "n9", "", keys).empty());
}

TEST_CASE("labels: blocks, gputopo.conf islands, NVML clique, values, keys", "[labels]") {
    IslandMap map;
    parse_slurm_topology("BlockName=nvl72-a Nodes=g[01-18]\nSwitchName=s1 Nodes=h[1-4]\n", "t.conf", map);
    parse_island_conf("Island=rack7 Nodes=c[1-2]\n", "g.conf", map, nullptr);
    map.seal();
    LabelKeys keys;
    auto g = node_labels(map, {}, "g05", "", keys);
    CHECK(g == std::map<std::string, std::string>{{"accelerator.topograph.run/domain", "nvl72-a"}});
    CHECK(node_labels(map, {}, "g05", "", legacy_label_keys()) ==
          std::map<std::string, std::string>{{"network.topology.nvidia.com/accelerator", "nvl72-a"}});
    CHECK(node_labels(map, {}, "c2", "", keys) == std::map<std::string, std::string>{{keys.island, "rack7"}});
    // The clique: domain = the ClusterUUID, sub-domain = ClusterUUID.CliqueId
    // (the value of the GPU operator's nvidia.com/gpu.clique).
    auto h = node_labels(map, {}, "h2", "a2b3c4d5-0000-1111-2222-333344445555:7", keys);
    CHECK(h[keys.accelerator] == "a2b3c4d5-0000-1111-2222-333344445555");
    CHECK(h[keys.sub_domain] == "a2b3c4d5-0000-1111-2222-333344445555.7");
    CHECK(h["fabric.topograph.run/tier-0"] == "s1");
    CHECK(node_labels(map, {}, "h2", "a2b3c4d5-0000-1111-2222-333344445555:7", legacy_label_keys())
              ["network.topology.nvidia.com/accelerator"] == "a2b3c4d5-0000-1111-2222-333344445555.7");
    // A block wins over the clique for the accelerator key.
    CHECK(node_labels(map, {}, "g01", "u:1", keys)[keys.accelerator] == "nvl72-a");

    std::string v63(63, 'a'), v64(64, 'a');
    CHECK(label_value(v63) == v63);
    std::string hashed = label_value(v64);
    CHECK(hashed.size() == 17);
    CHECK(hashed[0] == 'x');
    CHECK(hashed.find_first_not_of("0123456789abcdef", 1) == std::string::npos);
    CHECK(label_value(v64) == hashed);                  // stable: the same island, the same label
    CHECK(label_value(std::string(64, 'b')) != hashed);
    CHECK(label_value("rack:7")[0] == 'x');             // ':' is not allowed in a label value
    CHECK(label_value("-x")[0] == 'x');
    CHECK(label_value("-x") != "-x");
}

TEST_CASE("gputopo labels: kubectl lines and JSON", "[labels][cli]") {
    std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    std::string conf = "/tmp/gputopo-labels-" + std::to_string(getpid()) + ".conf";
    std::ofstream(conf) << harness_topology_conf();
    auto r = gputopo_test::run_cli(cli, {"labels", "--nodes", "n[1-5]", "--topology-conf", conf});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("kubectl label node n3 fabric.topograph.run/tier-0=leaf2 "
                                      "fabric.topograph.run/tier-1=spine --overwrite\n"));
    CHECK_THAT(r.out, Catch::Contains("# n5: no island source names it"));
    r = gputopo_test::run_cli(cli, {"labels", "--nodes", "n[1-2]", "--topology-conf", conf, "--format", "json",
                                    "--keys", "leaf=kueue.example.com/rack"});
    REQUIRE(r.rc == 0);
    auto j = gputopo_test::JsonParser::parse(r.out);
    CHECK(j["nodes"][1]["node"].str == "n2");
    CHECK(j["nodes"][1]["labels"]["kueue.example.com/rack"].str == "leaf1");
    r = gputopo_test::run_cli(cli, {"labels", "--nodes", "n4", "--topology-conf", conf, "--key-set", "topograph-legacy"});
    CHECK_THAT(r.out, Catch::Contains("network.topology.nvidia.com/leaf=leaf2 network.topology.nvidia.com/spine=spine"));
    r = gputopo_test::run_cli(cli, {"labels", "--nodes", "n1", "--keys", "rack=x"});
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("--keys: 'rack=x'"));
    r = gputopo_test::run_cli(cli, {"labels", "--nodes", "n[1-2]", "--clique"});
    CHECK(r.rc == 2);
    std::remove(conf.c_str());
}
