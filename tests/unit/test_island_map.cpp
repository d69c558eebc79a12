// Islands across nodes: the island map, gputopo.conf, Slurm topology.conf
// (tree and block files from tests/fixtures/topologies/slurm), local evidence.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/unit/fixtures.hpp"
#include "topo/core/conf_lines.hpp"
#include "topo/core/errors.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/fabric/island_sources.hpp"

using namespace gputopo;

namespace {

std::string slurm_fixture(const std::string& name) { return gputopo_test::topology("slurm/" + name); }

IslandMap topology(const std::string& name) {
    IslandMap m;
    read_slurm_topology(slurm_fixture(name), m);
    m.seal();
    return m;
}

uint64_t total_nodes(const IslandMap& m) {
    uint64_t n = 0;
    for (const Island& i : m.islands()) n += i.nodes;
    return n;
}

std::string name_of(const IslandMap& m, const std::string& node) {
    size_t id = m.find(node);
    return id == IslandMap::npos ? std::string("-") : m.island(id).name;
}

std::string error_of(const std::string& text, bool slurm) {
    IslandMap m;
    try {
        if (slurm) parse_slurm_topology(text, "/etc/x.conf", m);
        else parse_island_conf(text, "/etc/x.conf", m, nullptr);
        m.seal();
    } catch (const ParseError& e) {
        return e.what();
    }
    return "";
}

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/gputopo-islands-XXXXXX";
        path = mkdtemp(tmpl);
    }
    mutable std::vector<std::string> files;
    ~TempDir() {
        for (const std::string& f : files) unlink(f.c_str());
        rmdir(path.c_str());
    }
    std::string write(const std::string& name, const std::string& text) const {
        std::string p = path + "/" + name;
        std::ofstream(p) << text;
        files.push_back(p);
        return p;
    }
};

}  // namespace

TEST_CASE("islands: one short line of names over 18 digits cannot cost gigabytes (issue 20, H7)", "[islands][bounds]") {
    // 55 bytes: 16,777,216 names of 24 digits, each kept by name (2 GB and 56 s before).
    const std::string line = "Island=a Nodes=x1234567890123456[00000000-16777215]\n";
    auto t0 = std::chrono::steady_clock::now();
    IslandMap map;
    std::string m;
    try {
        parse_island_conf(line, "gputopo.conf", map, nullptr);
    } catch (const ParseError& e) {
        m = e.what();
    }
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
    CHECK_THAT(m, Catch::Contains("gputopo.conf:1") && Catch::Contains("16777216 names of more than 18 digits") &&
                      Catch::Contains("expected node names with at most 18 digits"));
    // The same through Slurm's topology.conf: and the budget is the map's, not the line's.
    IslandMap tmap;
    std::string conf;
    for (int i = 0; i < 40; ++i)
        conf += "SwitchName=s" + std::to_string(i) + " Nodes=x12345678901234" + std::to_string(10 + i) +
                "[00000000-00099999]\n";
    CHECK_THROWS_WITH(parse_slurm_topology(conf, "topology.conf", tmap),
                      Catch::Contains("topology.conf:") && Catch::Contains("exceeds what an island map may hold"));
    // Real use of such names still works: a few thousand of them.
    IslandMap small;
    parse_island_conf("Island=a Nodes=x1234567890123456[00000000-00001999]\n", "gputopo.conf", small, nullptr);
    CHECK(small.find("x123456789012345600001234") == small.id_of("a").value());
    CHECK(small.find("x123456789012345600002000") == IslandMap::npos);
}

TEST_CASE("islands: GB200 NVL72 block file: 4 blocks of 18 nodes", "[islands]") {
    IslandMap m = topology("azure-cyclecloud_gb200-nvl72_4blocks-x18_block-topology.conf");
    REQUIRE(m.size() == 4);
    CHECK(total_nodes(m) == 72);
    for (const Island& i : m.islands()) {
        CHECK(i.nodes == 18);
        CHECK(i.source == IslandSource::TopologyBlock);
    }
    // Read from the file: block k (1-based, in file order) holds hpc-k, hpc-k+4, ... hpc-k+68.
    const char* blocks[] = {"block_5e797fc6-0f46-421a-8724-0e102c0f723c", "block_5e797fc6-0f46-421a-8724-0e102c0f721e",
                            "block_5e797fc6-0f46-421a-8724-0e102c0f724b", "block_5e797fc6-0f46-421a-8724-0e102c0f722a"};
    for (int n = 1; n <= 72; ++n) {
        std::string node = "hpcbench-hpc-" + std::to_string(n);
        CHECK(name_of(m, node) == blocks[(n - 1) % 4]);
    }
    CHECK(m.find("hpcbench-hpc-73") == IslandMap::npos);
    CHECK(m.find("hpcbench-hpc-01") == IslandMap::npos);
}

TEST_CASE("islands: InfiniBand tree by GUID: 40 leaf switches, 128 nodes", "[islands]") {
    IslandMap m = topology("azure-cyclecloud_ib-fabric-tree_guids_topology.conf");
    CHECK(m.size() == 40);
    CHECK(total_nodes(m) == 128);
    CHECK(name_of(m, "0x155dfffd33ff7d") == "ibsw1");
    CHECK(name_of(m, "0x155dfffd33ffd5") == "ibsw1");
    CHECK(name_of(m, "0x155dfffd340069") == "ibsw3");
    CHECK(name_of(m, "0x155dfffd34005a") == "ibsw37");
    CHECK(m.find("0x155dfffd33ff7e0") == IslandMap::npos);
    // Upper switches (Switches= only) are no islands.
    CHECK_FALSE(m.id_of("ibsw47"));
    CHECK_FALSE(m.id_of("ibsw14"));
}

TEST_CASE("islands: InfiniBand tree by host name: 5 leaves, 16 nodes", "[islands]") {
    IslandMap m = topology("azure-cyclecloud_ib-tree_hostnames_topology.conf");
    CHECK(m.size() == 5);
    CHECK(total_nodes(m) == 16);
    CHECK(name_of(m, "hpcbench-hpc-36") == "sw00");
    CHECK(name_of(m, "hpcbench-hpc-1") == "sw01");
    CHECK(name_of(m, "hpcbench-hpc-49") == "sw01");
    CHECK(name_of(m, "hpcbench-hpc-48") == "sw04");
    CHECK(name_of(m, "hpcbench-hpc-2") == "-");
    CHECK_FALSE(m.id_of("sw05"));
}

TEST_CASE("islands: Slurm test suite multi-level tree: 500 leaves of 20 nodes", "[islands]") {
    IslandMap m = topology("slurm-testsuite_test_133_1_testcase1_multilevel-tree_topology.conf");
    CHECK(m.size() == 500);
    CHECK(total_nodes(m) == 10000);
    // leafK holds peta[10000+20*(K-100) .. +19] (read from the file).
    for (int node = 10000; node < 20000; node += 7) {
        int leaf = 100 + (node - 10000) / 20;
        CHECK(name_of(m, "peta" + std::to_string(node)) == "leaf" + std::to_string(leaf));
    }
    CHECK(name_of(m, "peta19999") == "leaf599");
    CHECK(name_of(m, "peta20000") == "-");
    CHECK_FALSE(m.id_of("grp10"));
    CHECK_FALSE(m.id_of("root"));
}

TEST_CASE("islands: man page example with tree, block and ring lines", "[islands]") {
    IslandMap m = topology("slurm-man5-topology.conf_EXAMPLES_tree+block+ring.conf");
    CHECK(m.size() == 7);  // s0 s1 s2 (tree leaves) + block1..4; rings are not islands
    CHECK(total_nodes(m) == 18 + 128);
    CHECK(name_of(m, "dev0") == "s0");
    CHECK(name_of(m, "dev7") == "s1");
    CHECK(name_of(m, "dev17") == "s2");
    CHECK(name_of(m, "node1") == "block1");
    CHECK(name_of(m, "node33") == "block2");
    CHECK(name_of(m, "node128") == "block4");
    CHECK(*m.source_of("node128") == IslandSource::TopologyBlock);
    CHECK(*m.source_of("dev3") == IslandSource::TopologyTree);
    // "node01" is not "node1": padding is part of the name.
    CHECK(name_of(m, "node01") == "-");
    CHECK_FALSE(m.id_of("ring0"));
}

TEST_CASE("islands: precedence gputopo.conf > block > tree leaf", "[islands]") {
    IslandMap m;
    parse_slurm_topology("SwitchName=leaf1 Nodes=n[1-4]\nSwitchName=leaf2 Nodes=n[5-8]\n"
                         "SwitchName=spine Switches=leaf[1-2]\nBlockName=rackA Nodes=n[3-6]\n",
                         "topology.conf", m);
    parse_island_conf("Island=fast Nodes=n[1-2],n8\n", "gputopo.conf", m, nullptr);
    m.seal();
    CHECK(name_of(m, "n1") == "fast");
    CHECK(*m.source_of("n1") == IslandSource::GputopoConf);
    CHECK(name_of(m, "n3") == "rackA");
    CHECK(name_of(m, "n4") == "rackA");
    CHECK(name_of(m, "n6") == "rackA");
    CHECK(name_of(m, "n7") == "leaf2");
    CHECK(*m.source_of("n7") == IslandSource::TopologyTree);
    CHECK(name_of(m, "n8") == "fast");
    CHECK(name_of(m, "n9") == "-");
    CHECK_FALSE(m.source_of("n9"));
}

TEST_CASE("islands: lookups follow hostlist names exactly", "[islands]") {
    IslandMap m;
    parse_island_conf("Island=a Nodes=nid0000[2-7]\nIsland=b Nodes=n[8-12]\nIsland=c Nodes=m[098-101],login\n"
                      "BlockName=d Nodes=rack[1-2]-node[01-02]\nIsland=e Nodes=x1234567890123456789\n",
                      "g.conf", m, nullptr);
    CHECK(name_of(m, "nid00003") == "a");
    CHECK(name_of(m, "nid00008") == "-");
    CHECK(name_of(m, "nid0003") == "-");
    CHECK(name_of(m, "n10") == "b");
    CHECK(name_of(m, "n010") == "-");
    CHECK(name_of(m, "n08") == "-");
    CHECK(name_of(m, "m099") == "c");
    CHECK(name_of(m, "m100") == "c");
    CHECK(name_of(m, "m0100") == "-");
    CHECK(name_of(m, "m99") == "-");
    CHECK(name_of(m, "login") == "c");
    CHECK(name_of(m, "rack2-node02") == "d");
    CHECK(name_of(m, "rack3-node01") == "-");
    CHECK(name_of(m, "x1234567890123456789") == "e");
    // A range host looked up without building its name.
    Hostlist step = Hostlist::parse("m[099-100],n[9-10]");
    CHECK(m.island(m.find(step.ranges()[0], 100)).name == "c");
    CHECK(m.island(m.find(step.ranges()[1], 10)).name == "b");
}

TEST_CASE("islands: one island per line group, same name merges", "[islands]") {
    IslandMap m;
    parse_island_conf("Island=a Nodes=n[1-2]\nIsland=a Nodes=n[5-6]\n# comment\n\n  island=B   nodes=q1 # trailing\n",
                      "g.conf", m, nullptr);
    m.seal();
    CHECK(m.size() == 2);
    CHECK(m.island(0).nodes == 4);
    CHECK(name_of(m, "n5") == "a");
    CHECK(name_of(m, "q1") == "B");
    CHECK(m.island(1).origin == "g.conf:5");
}

TEST_CASE("Slurm-style lines: spaces around '=' and quoted values as Slurm reads them (issue 33, finding 7)",
          "[islands]") {
    std::vector<ConfLine> lines =
        parse_conf_lines("SwitchName = s1 Nodes= \"n[1-2]\"\nA=\"x y\" B=\"q\"r C=\nD= E=f\n", "t.conf");
    REQUIRE(lines.size() == 3);
    using P = std::vector<std::pair<std::string, std::string>>;
    CHECK(lines[0].pairs == P{{"SwitchName", "s1"}, {"Nodes", "n[1-2]"}});
    // Slurm's regex: a quote not followed by a space is part of an unquoted value; "D= E=f" is D="E=f".
    CHECK(lines[1].pairs == P{{"A", "x y"}, {"B", "\"q\"r"}, {"C", ""}});
    CHECK(lines[2].pairs == P{{"D", "E=f"}});
    CHECK(slurm_bool("YES") == true);
    CHECK(slurm_bool("Down") == false);
    CHECK_FALSE(slurm_bool("yess"));
}

TEST_CASE("islands: malformed lines give file, line, text and what was expected", "[islands]") {
    struct Case {
        const char* text;
        bool slurm;
        const char* must;
    } cases[] = {
        {"Island=a\n", false, "/etc/x.conf:1: 'Island=a': no Nodes="},
        {"\n\nNodes=n1\n", false, "/etc/x.conf:3: 'Nodes=n1': unknown key 'Nodes'"},
        {"Island=a Nodes=n[1-\n", false, "/etc/x.conf:1: 'Island=a Nodes=n[1-'"},
        {"Island=a Nodes=n1 Color=red\n", false, "unknown key 'Color'"},
        {"Island=a b Nodes=n1\n", false, "'b' is not Key=Value"},
        {"Island=a$ Nodes=n1\n", false, "bad island name 'a$'"},
        {"TopologyConf=/etc/slurm/topology.conf\n", false, "TopologyConf= is not allowed here"},
        {"Island=a Nodes=n[1-4]\nIsland=b Nodes=n[4-5]\n", false, "node 'n4' is in island 'b' and in island 'a' (/etc/x.conf:1)"},
        {"Island=a Nodes=x\nIsland=b Nodes=x\n", false, "node 'x' is in island 'b' and already in island 'a'"},
        {"SwitchName=s1 Nodes=n[1-2] Bogus=1\n", true, "/etc/x.conf:1: 'SwitchName=s1 Nodes=n[1-2] Bogus=1': unknown key 'Bogus'"},
        {"BlockName=b1\n", true, "no Nodes="},
        {"Island=x Nodes=n1\n", true, "unknown key 'Island'"},
        {"SwitchName=s1 Nodes=n[3-1]\n", true, "runs backwards"},
    };
    for (const Case& c : cases) {
        INFO(c.text);
        std::string msg = error_of(c.text, c.slurm);
        CHECK(msg.find(c.must) != std::string::npos);
        CHECK(msg.find("expected") != std::string::npos);
    }
}

TEST_CASE("islands: load_islands follows TopologyConf= relative to gputopo.conf", "[islands]") {
    TempDir dir;
    dir.write("topology.conf", "SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n"
                               "SwitchName=spine Switches=leaf[1-2]\n");
    std::string conf = dir.write("gputopo.conf", "TopologyConf=topology.conf\nIsland=override Nodes=n2\n");
    IslandMap m = load_islands(conf);
    CHECK(name_of(m, "n1") == "leaf1");
    CHECK(name_of(m, "n2") == "override");
    CHECK(name_of(m, "n4") == "leaf2");
    std::string missing = dir.write("bad.conf", "TopologyConf=nothere.conf\n");
    try {
        load_islands(missing);
        FAIL("no error for a missing topology.conf");
    } catch (const TopologyError& e) {
        CHECK(std::string(e.what()).find(dir.path + "/nothere.conf") != std::string::npos);
    }
    CHECK_THROWS_AS(load_islands(dir.path + "/absent.conf"), TopologyError);
}

TEST_CASE("islands: 100,000 nodes in 100 islands, interleaved", "[islands]") {
    // Island k holds every node whose number is k mod 100: 1,000 one-host ranges each.
    std::string text;
    for (int k = 0; k < 100; ++k) {
        text += "Island=i" + std::to_string(k) + " Nodes=gpu[";
        bool first = true;
        for (int n = (k == 0 ? 100 : k); n <= 100000; n += 100) {
            char buf[16];
            std::snprintf(buf, sizeof buf, "%06d", n);
            text += (first ? "" : ",") + std::string(buf);
            first = false;
        }
        text += "]\n";
    }
    IslandMap m;
    parse_island_conf(text, "big.conf", m, nullptr);
    m.seal();
    CHECK(m.size() == 100);
    CHECK(total_nodes(m) == 100000);
    for (int n = 1; n <= 100000; n += 997) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "gpu%06d", n);
        CHECK(name_of(m, buf) == "i" + std::to_string(n % 100));
    }
    CHECK(name_of(m, "gpu100001") == "-");
}

TEST_CASE("islands: SLURM_TOPOLOGY_ADDR leaf and NVML cliques", "[islands]") {
    CHECK(leaf_from_topology_addr("spine.leaf1.n1", "switch.switch.node") == "leaf1");
    CHECK(leaf_from_topology_addr("root.im0.grp10.leaf100.peta10000", "switch.switch.switch.switch.node") ==
          "leaf100");
    CHECK(leaf_from_topology_addr("spine.leaf1.n1", "") == "leaf1");
    CHECK(leaf_from_topology_addr("n1", "node") == "");
    CHECK(leaf_from_topology_addr("", "") == "");

    Node node;
    node.gpus.resize(4);
    CHECK(nvml_clique_of(node).empty());
    for (Gpu& g : node.gpus) {
        g.fabric_cluster_uuid = "5e797fc6-0f46-421a-8724-0e102c0f723c";
        g.fabric_clique = 7;
    }
    CHECK(nvml_clique_of(node) == "5e797fc6-0f46-421a-8724-0e102c0f723c:7");
    node.gpus[2].fabric_clique = 8;
    std::string why;
    CHECK(nvml_clique_of(node, &why).empty());
    CHECK(why.find("different NVLink cliques") != std::string::npos);
}

#include "spank/plugstack_args.hpp"

TEST_CASE("islands: plugstack.conf islands=PATH", "[islands]") {
    spank::PluginConfig c = spank::parse_plugstack_args({"topology=/x/%n.xml", "islands=/etc/slurm/gputopo.conf"});
    CHECK(c.islands == "/etc/slurm/gputopo.conf");
    CHECK(spank::parse_plugstack_args({}).islands.empty());
    CHECK_THROWS_WITH(spank::parse_plugstack_args({"islands=gputopo.conf"}), Catch::Contains("must be an absolute path"));
    CHECK_THROWS_WITH(spank::parse_plugstack_args({"islands=/a", "islands=/b"}), Catch::Contains("given twice"));
}

TEST_CASE("islands: copied and reassigned maps answer from their own tables", "[islands]") {
    IslandMap a;
    parse_island_conf("Island=x Nodes=n[1-4]\nIsland=y Nodes=n[5-8]\n", "g.conf", a, nullptr);
    Hostlist h = Hostlist::parse("n[1-8]");
    const HostRange& r = h.ranges().front();
    CHECK(a.island(a.find(r, 2)).name == "x");  // warms the lookup cache
    IslandMap b = a;
    a = IslandMap();
    CHECK(a.find(r, 2) == IslandMap::npos);
    a = b;
    b = IslandMap();
    CHECK(a.island(a.find(r, 2)).name == "x");
    CHECK(a.island(a.find(r, 7)).name == "y");
    IslandMap c = std::move(a);
    CHECK(c.island(c.find(r, 6)).name == "y");
}
