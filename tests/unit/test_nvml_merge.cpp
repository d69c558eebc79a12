// NVML data merged into models read from the shipped topologies, by PCI bus
// id, through the fake libnvidia-ml.so.1.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tests/unit/nvml_fake.hpp"
#include "topo/core/distance.hpp"
#include "topo/plan/islands.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;
using gputopo_test::FakeNvmlScenario;

namespace {

NvmlSnapshot fake_snapshot(const std::string& fixture) {
    std::string lib = gputopo_test::fake_nvml_library();
    INFO("fake NVML library: " << lib);
    REQUIRE(gputopo_test::file_exists(lib));
    FakeNvmlScenario sc(fixture);
    NvmlSnapshot s = read_nvml(lib);
    REQUIRE(s.available);
    return s;
}

const char* kH200 = "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";
const char* kPerlmutter = "nccl/nersc-perlmutter-gpu-nid001056_4xA100-SXM4-40GB_4xSlingshot-Cassini_EPYC7763_nccl-dump.xml";
const char* kMinsky = "hwloc/ibm-power8-minsky_2xPOWER8NVL_4xP100-SXM2_NVLinkBW_hwloc2.xml";

// The GPU-GPU block of an `nvidia-smi topo -m` capture: rows of labels.
std::vector<std::vector<std::string>> smi_gpu_matrix(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::vector<std::vector<std::string>> rows;
    std::regex row_re("^GPU([0-9]+)\\t(.*)$");
    std::smatch m;
    while (std::getline(in, line)) {
        if (!std::regex_match(line, m, row_re)) continue;
        std::vector<std::string> cells;
        std::istringstream cs(m[2].str());
        std::string c;
        while (std::getline(cs, c, '\t')) {
            c.erase(0, c.find_first_not_of(' '));
            c.erase(c.find_last_not_of(' ') + 1);
            cells.push_back(c);
        }
        rows.push_back(cells);
    }
    return rows;
}

}  // namespace

TEST_CASE("NVML merge: NVSwitch links make one island and reproduce nvidia-smi's NV18", "[nvml]") {
    Node node = load_topology_file(gputopo_test::topology(kH200));
    node.links.clear();  // what hwloc without NVML would know: no NVLink at all
    REQUIRE(gpu_islands(node) != std::vector<int>(8, 0));

    merge_nvml(node, fake_snapshot("hgx-h200-nvswitch.nvml"));
    REQUIRE(node.gpus.size() == 8);
    auto smi = smi_gpu_matrix(gputopo_test::topology("nvidia-smi/vastai-hgx-h200-8x_8xH200_8xCX-VF_topo-m.txt"));
    REQUIRE(smi.size() == 8);
    for (int a = 0; a < 8; ++a)
        for (int b = 0; b < 8; ++b) {
            if (a == b) continue;
            INFO("GPU" << a << " GPU" << b);
            CHECK(gpu_gpu_path(node, a, b).label() == smi[static_cast<size_t>(a)][static_cast<size_t>(b)]);
            const GpuLink* l = node.link(a, b);
            REQUIRE(l);
            CHECK(l->via_switch);
        }
    CHECK(gpu_islands(node) == std::vector<int>(8, 0));
    for (const auto& g : node.gpus) {
        CHECK(g.model == "NVIDIA H200");
        CHECK(g.memory_bytes == 141ULL << 30);
        CHECK(g.uuid.rfind("GPU-", 0) == 0);
        CHECK(g.fabric_clique == -1);
    }
    CHECK(node.gpus[0].os_names.size() >= 1);
}

TEST_CASE("NVML merge: links that are down no longer count", "[nvml]") {
    Node node = load_topology_file(gputopo_test::topology(kH200));
    merge_nvml(node, fake_snapshot("hgx-h200-links-down.nvml"));
    // GPU 3 (0000:9b:00.0) keeps 4 + 4 of its 18 switch links.
    REQUIRE(node.gpus[3].pci == PciAddress::parse("0000:9b:00.0"));
    for (int g = 0; g < 8; ++g) {
        if (g == 3) continue;
        REQUIRE(node.link(3, g));
        CHECK(node.link(3, g)->count == 8);
        CHECK(gpu_gpu_path(node, 3, g).label() == "NV8");
    }
    CHECK(node.link(0, 1)->count == 18);
    CHECK(gpu_islands(node) == std::vector<int>(8, 0));
}

TEST_CASE("NVML merge: Perlmutter's NV4 mesh", "[nvml]") {
    Node node = load_topology_file(gputopo_test::topology(kPerlmutter));
    node.links.clear();
    merge_nvml(node, fake_snapshot("perlmutter-nv4.nvml"));
    auto smi = smi_gpu_matrix(gputopo_test::topology("nvidia-smi/nersc-perlmutter-gpu_4xA100-SXM4_4xSlingshot_topo-m.txt"));
    REQUIRE(smi.size() == 4);
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b)
            if (a != b) {
                INFO("GPU" << a << " GPU" << b);
                CHECK(gpu_gpu_path(node, a, b).label() == smi[static_cast<size_t>(a)][static_cast<size_t>(b)]);
                CHECK_FALSE(node.link(a, b)->via_switch);
            }
    CHECK(node.links.size() == 6);
}

TEST_CASE("NVML merge: Minsky pairs are two islands; hwloc's bandwidth is kept", "[nvml]") {
    Node node = load_topology_file(gputopo_test::topology(kMinsky));
    // NVLinkBandwidth in the export: GPU pairs (0,1) and (2,3) at 40000 MB/s (2 links).
    merge_nvml(node, fake_snapshot("minsky-pairs.nvml"));
    REQUIRE(node.links.size() == 2);
    REQUIRE(node.link(0, 1));
    REQUIRE(node.link(2, 3));
    CHECK(node.link(0, 1)->count == 2);
    CHECK(node.link(2, 3)->count == 2);
    CHECK_FALSE(node.link(0, 2));
    auto isl = gpu_islands(node);
    CHECK(isl[0] == isl[1]);
    CHECK(isl[2] == isl[3]);
    CHECK(isl[0] != isl[2]);
    CHECK(node.gpus[0].model == "Tesla P100-SXM2-16GB");
}

TEST_CASE("NVML merge: two GB300 trays share a fabric cluster and clique", "[nvml]") {
    std::vector<std::pair<std::string, int>> ids;
    for (const char* tray : {"gb300-tray0.nvml", "gb300-tray1.nvml"}) {
        Node node;  // hwloc saw nothing: NVML's GPUs are added, with a warning each
        node.source = "empty";
        merge_nvml(node, fake_snapshot(tray));
        REQUIRE(node.gpus.size() == 4);
        CHECK(node.warnings.size() == 4);
        CHECK(node.links.size() == 6);
        for (const auto& l : node.links) {
            CHECK(l.via_switch);
            CHECK(l.count == 18);
        }
        CHECK(gpu_islands(node) == std::vector<int>(4, 0));
        for (const auto& g : node.gpus) ids.emplace_back(g.fabric_cluster_uuid, g.fabric_clique);
        CHECK(node.gpus[0].uuid != node.gpus[1].uuid);
    }
    REQUIRE(ids.size() == 8);
    std::set<std::pair<std::string, int>> distinct(ids.begin(), ids.end());
    REQUIRE(distinct.size() == 1);
    CHECK(distinct.begin()->first == "8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f");
    CHECK(distinct.begin()->second == 32766);
}

TEST_CASE("NVML merge: not available leaves the model as it was", "[nvml]") {
    Node node = load_topology_file(gputopo_test::topology(kPerlmutter));
    Node before = node;
    NvmlSnapshot none;
    none.reason = "cannot load libnvidia-ml.so.1";
    merge_nvml(node, none);
    REQUIRE(node.gpus.size() == before.gpus.size());
    CHECK(node.links.size() == before.links.size());
    for (size_t i = 0; i < node.gpus.size(); ++i) CHECK(node.gpus[i].pci == before.gpus[i].pci);
    REQUIRE(node.warnings.size() == before.warnings.size() + 1);
    CHECK(node.warnings.back().find("NVML not available") != std::string::npos);
}

TEST_CASE("NVML merge: a lost GPU keeps hwloc's view, the others are merged", "[nvml]") {
    Node node = load_topology_file(gputopo_test::topology(kPerlmutter));
    merge_nvml(node, fake_snapshot("nvml-errors.nvml"));
    REQUIRE(node.gpus.size() == 4);
    // 03 and 82 report 4 active links to each other; the lost GPU reports none.
    int i03 = -1, i82 = -1;
    for (const auto& g : node.gpus) {
        if (g.pci == PciAddress::parse("0000:03:00.0")) i03 = g.index;
        if (g.pci == PciAddress::parse("0000:82:00.0")) i82 = g.index;
    }
    REQUIRE(node.links.size() == 1);
    REQUIRE(node.link(i03, i82));
    CHECK(node.link(i03, i82)->count == 4);
    for (const auto& g : node.gpus) CHECK(g.local_cpus.count() == 32);  // hwloc's / the dump's affinity kept
}
