// The NCCL/RCCL topology XML reader on every shipped NCCL file. Expected
// counts were written by reading each file (tests/fixtures/topologies/nccl/),
// not from the program's output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "topo/core/distance.hpp"
#include "topo/core/errors.hpp"
#include "topo/sources/nccl_xml_source.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;
using gputopo_test::topology;

namespace {

struct Expected {
    const char* file;
    int gpus;       // -1: the file must be refused
    int rdma_nics;  // RDMA NICs
    int nics;       // all NICs (socket interfaces too)
    int numa;
    const char* error;  // substring of the error when gpus == -1
};

// From reading the files:
//  - <cpu> elements give NUMA nodes (GB300: only the first host's two).
//  - GPUs: <pci> of class 0302/0380/1200 (with or without a <gpu> element).
//  - RDMA NICs: <net> with port >= 1 (mlx5_*, cxi*, bnxt_re*, rdma_vf_*), or a
//    NIC-class <pci> of a hand-written file; eth0 with port 0 is a socket NIC.
const Expected kFiles[] = {
    {"alibaba-simai_8xA100-SXM4-80GB_5xCX6Dx-bond_2xXeon-IceLake_nccl-dump.xml", 8, 5, 5, 2, nullptr},
    {"aws-g5.48xlarge_8xA10G_nccl-topo.xml", -1, 0, 0, 0, "describes no GPUs"},
    {"aws-p4d.24xlarge_8xA100-SXM4-40GB_4xEFA_2xXeon8275CL_nccl-topo.xml", 8, 4, 4, 2, nullptr},
    {"aws-p4de.24xlarge_8xA100-SXM4-80GB_4xEFA_2xXeon8275CL_nccl-topo.xml", 8, 4, 4, 2, nullptr},
    {"aws-p5.48xlarge_8xH100_32xEFA_nccl-topo_REMOVED-upstream.xml", -1, 0, 0, 0, "describes no GPUs"},
    {"azure-NC96ads_A100_v4_4xA100-PCIe_EPYC7V13_nccl-topo.xml", 4, 0, 1, 4, nullptr},
    {"azure-NC96ads_A100_v4_nccl-graph.xml", -1, 0, 0, 0, "NCCL graph file"},
    {"azure-ND40rs_v2_8xV100-SXM2_1xEDR-IB_2xXeon8168_nccl-topo.xml", 8, 1, 1, 2, nullptr},
    {"azure-ND96asr_v4_8xA100-SXM4-40GB_8xHDR-IB_2xEPYC7V12_nccl-topo.xml", 8, 8, 8, 4, nullptr},
    {"azure-ND96isr_H100_v5_8xH100-SXM5_8xNDR-IB_2xXeon8480C_nccl-topo.xml", 8, 8, 8, 2, nullptr},
    {"nersc-perlmutter-gpu-nid001056_4xA100-SXM4-40GB_4xSlingshot-Cassini_EPYC7763_nccl-dump.xml", 4, 4, 4, 4, nullptr},
    {"oci-BM.GPU.B4.8_8xA100-SXM4_16xRoCE_2xEPYC7J13_nccl-topo-flattened.xml", 8, 8, 8, 4, nullptr},
    {"oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml", 8, 16, 16, 2, nullptr},
    {"oci-BM.GPU4.8_8xA100-SXM4_16xRoCE_2xEPYC7542_nccl-topo-flattened.xml", 8, 8, 8, 4, nullptr},
    {"oci-GB300-NVL72_2trays_2xGrace+4xGB300-per-tray_CX8_nccl-dump-2nodes.xml", 4, 4, 4, 2, nullptr},
    {"oci-HGX-B300-8x_8xB300_8xCX8-VF_2xXeon-EmeraldRapids_nccl-dump.xml", 8, 8, 8, 2, nullptr},
    {"rccl-topo_8p_90a_8xMI250X-GCD_1NIC_rccl-dump.xml", 8, 0, 1, 1, nullptr},
    {"rccl-topo_8p_940_8xMI300X_8xCX7_2xXeon-SPR_rccl-dump.xml", 8, 8, 8, 2, nullptr},
    {"rccl-topo_8p_950_8xMI355X_8xBroadcom-Thor2-400G_2xEPYC-Turin_rccl-dump.xml", 8, 8, 8, 2, nullptr},
    {"rccl-topo_8p_rome_4nics_8xMI100_4NIC_EPYC-Rome_rccl-dump.xml", 8, 4, 4, 4, nullptr},
    {"vastai-hgx-b200-8x_8xB200_2xXeon8559C_nccl-dump.xml", 8, 0, 1, 2, nullptr},
    {"vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml", 8, 0, 1, 2, nullptr},
};

std::string nccl(const std::string& f) { return topology("nccl/" + f); }

Node load(const std::string& f) { return load_topology_file(nccl(f)); }

int rdma_count(const Node& n) {
    return static_cast<int>(std::count_if(n.nics.begin(), n.nics.end(), [](const Nic& x) { return x.rdma; }));
}

size_t nic_index(const Node& n, const std::string& name) {
    for (size_t i = 0; i < n.nics.size(); ++i)
        if (n.nics[i].name == name) return i;
    FAIL("no NIC " << name);
    return 0;
}

int gpu_at(const Node& n, const std::string& busid) {
    for (const auto& g : n.gpus)
        if (g.pci == PciAddress::parse(busid)) return g.index;
    FAIL("no GPU at " << busid);
    return -1;
}

// Every pair linked, all with the same label.
void check_all_pairs(const Node& n, const std::string& label) {
    for (int a = 0; a < static_cast<int>(n.gpus.size()); ++a)
        for (int b = 0; b < static_cast<int>(n.gpus.size()); ++b) {
            INFO("GPU" << a << " - GPU" << b);
            CHECK(gpu_gpu_path(n, a, b).label() == (a == b ? "X" : label));
        }
}

}  // namespace

TEST_CASE("every shipped NCCL/RCCL file is listed with its expected counts", "[nccl]") {
    std::set<std::string> listed;
    for (const auto& e : kFiles) listed.insert(e.file);
    int seen = 0;
    for (const auto& entry : std::filesystem::directory_iterator(topology("nccl"))) {
        const std::string name = entry.path().filename().string();
        INFO(name);
        CHECK(listed.count(name) == 1);
        ++seen;
    }
    CHECK(seen == static_cast<int>(listed.size()));
}

TEST_CASE("every NCCL/RCCL file loads with the GPUs, NICs and NUMA nodes it describes", "[nccl]") {
    for (const auto& e : kFiles) {
        INFO(e.file);
        if (e.gpus < 0) {
            try {
                load(e.file);
                FAIL("expected a TopologyError");
            } catch (const TopologyError& err) {
                const std::string msg = err.what();
                CHECK(msg.find(e.error) != std::string::npos);
                CHECK(msg.find(e.file) != std::string::npos);
                CHECK(msg.rfind("gputopo: ", 0) == std::string::npos);  // the front ends add the prefix
            }
            continue;
        }
        const Node n = load(e.file);
        CHECK(static_cast<int>(n.gpus.size()) == e.gpus);
        CHECK(rdma_count(n) == e.rdma_nics);
        CHECK(static_cast<int>(n.nics.size()) == e.nics);
        CHECK(static_cast<int>(n.numa_nodes.size()) == e.numa);
        // No cores in NCCL XML; where the x86 enumeration rule applies, CPU i and i+T/2 pair up.
        for (const auto& c : n.cores) CHECK(c.pus == CpuSet::parse_list(std::to_string(c.pus.first()) + "," +
                                                                      std::to_string(c.pus.first() + n.cpus.count() / 2)));
        for (size_t i = 0; i < n.gpus.size(); ++i) {
            CHECK(n.gpus[i].index == static_cast<int>(i));
            if (i > 0) CHECK(n.gpus[i - 1].pci < n.gpus[i].pci);
            CHECK(n.gpus[i].numa >= 0);
            CHECK_FALSE(n.gpus[i].local_cpus.empty());
            CHECK(n.gpus[i].pci_object >= 0);
        }
    }
}

TEST_CASE("NUMA nodes come from <cpu numaid affinity>", "[nccl]") {
    // Perlmutter: numaid 3 first, mask ffff0000,00000000,ffff0000,00000000.
    const Node n = load(kFiles[10].file);
    REQUIRE(n.numa_nodes.size() == 4);
    CHECK(n.numa_nodes[0].os_index == 0);
    CHECK(n.numa_nodes[3].os_index == 3);
    CHECK(n.numa_nodes[3].cpus.to_list() == "48-63,112-127");
    CHECK(n.numa_nodes[0].cpus.to_list() == "0-15,64-79");
    CHECK(n.cpus.to_list() == "0-127");
    // GPU 0000:03:00.0 sits under numaid 3.
    const Gpu* g0 = n.gpu(0);
    REQUIRE(g0);
    CHECK(g0->pci.to_string() == "0000:03:00.0");
    CHECK(g0->numa == 3);
}

TEST_CASE("NVLink through NVSwitches: count = the smaller total switch link count", "[nccl]") {
    // HGX H200 and OCI H100: each GPU 5+5+4+4 links to four NVSwitches.
    check_all_pairs(load(kFiles[21].file), "NV18");
    check_all_pairs(load(kFiles[12].file), "NV18");
    // B200, B300: one placeholder switch target fffffff:ff:ff.0, count 18.
    check_all_pairs(load(kFiles[20].file), "NV18");
    check_all_pairs(load(kFiles[15].file), "NV18");
    // Alibaba A100: 6 switches x 2 links.
    check_all_pairs(load(kFiles[0].file), "NV12");
    const Node h200 = load(kFiles[21].file);
    CHECK(h200.links.size() == 28);
    for (const auto& l : h200.links) {
        CHECK(l.via_switch);
        CHECK(l.kind == LinkKind::NVLink);
    }
}

TEST_CASE("direct NVLink and xGMI links", "[nccl]") {
    SECTION("Perlmutter A100: NV4 between every pair, direct") {
        const Node n = load(kFiles[10].file);
        check_all_pairs(n, "NV4");
        REQUIRE(n.links.size() == 6);
        for (const auto& l : n.links) CHECK_FALSE(l.via_switch);
    }
    SECTION("MI300X and MI355X: one xGMI link between every pair") {
        const Node n = load(kFiles[17].file);
        check_all_pairs(n, "XGMI1");
        for (const auto& g : n.gpus) CHECK(g.vendor == Vendor::Amd);
        check_all_pairs(load(kFiles[18].file), "XGMI1");
    }
    SECTION("MI250X: each GCD links to three others") {
        const Node n = load(kFiles[16].file);
        // GCD c1:00.0 lists c5, c9, d9; d1:00.0 lists c9, d5, d9.
        const int c1 = gpu_at(n, "0000:c1:00.0");
        CHECK(gpu_gpu_path(n, c1, gpu_at(n, "0000:c5:00.0")).label() == "XGMI1");
        CHECK(gpu_gpu_path(n, c1, gpu_at(n, "0000:c9:00.0")).label() == "XGMI1");
        CHECK(gpu_gpu_path(n, c1, gpu_at(n, "0000:d9:00.0")).label() == "XGMI1");
        CHECK(gpu_gpu_path(n, c1, gpu_at(n, "0000:cd:00.0")).label() == "NODE");  // same <cpu>, no link
        CHECK(gpu_gpu_path(n, gpu_at(n, "0000:d1:00.0"), gpu_at(n, "0000:d5:00.0")).label() == "XGMI1");
        CHECK(n.links.size() == 12);
        // No vendor attribute in this file: RCCL's gcn attribute says AMD.
        for (const auto& g : n.gpus) CHECK(g.vendor == Vendor::Amd);
    }
    SECTION("MI100: two fully linked groups of four, nothing between them") {
        const Node n = load(kFiles[19].file);
        const std::vector<std::string> a = {"0000:4a:00.0", "0000:50:00.0", "0000:0a:00.0", "0000:0f:00.0"};
        const std::vector<std::string> b = {"0000:cb:00.0", "0000:d1:00.0", "0000:8a:00.0", "0000:90:00.0"};
        for (const auto& x : a)
            for (const auto& y : a)
                if (x != y) CHECK(gpu_gpu_path(n, gpu_at(n, x), gpu_at(n, y)).label() == "XGMI1");
        for (const auto& x : a)
            for (const auto& y : b) CHECK(n.link(gpu_at(n, x), gpu_at(n, y)) == nullptr);
        CHECK(n.links.size() == 12);
    }
    SECTION("a self-targeted <nvlink> (Azure NC A100 v4) is not a link") {
        const Node n = load(kFiles[5].file);
        CHECK(n.links.empty());
        CHECK(gpu_gpu_path(n, 0, 1).label() == "SYS");
    }
}

TEST_CASE("GB300 NVL72 dump of two trays: the first host only, with a warning", "[nccl]") {
    const Node n = load(kFiles[14].file);
    REQUIRE(n.gpus.size() == 4);
    check_all_pairs(n, "NV18");
    // The first host's GPUs: domains 0008, 0009, 0018, 0019.
    CHECK(n.gpus[0].pci.to_string() == "0008:06:00.0");
    CHECK(n.gpus[3].pci.to_string() == "0019:06:00.0");
    bool warned = false;
    for (const auto& w : n.warnings)
        if (w.find("2 hosts") != std::string::npos && w.find("skipped 1 other host") != std::string::npos &&
            w.find("4 GPUs") != std::string::npos)
            warned = true;
    CHECK(warned);
    // rdma_vf_rail0_dma (0009:03:00.0) shares the CX-8 switch 0009:01:00.0 with GPU 0009:06:00.0,
    // which sits one switch further down: PXB; the NIC of the other domain on the same Grace: NODE.
    CHECK(gpu_nic_path(n, 1, nic_index(n, "rdma_vf_rail0_dma")).label() == "PXB");
    CHECK(gpu_nic_path(n, 1, nic_index(n, "rdma_vf_rail1_dma")).label() == "NODE");
    CHECK(gpu_nic_path(n, 1, nic_index(n, "rdma_vf_rail2_dma")).label() == "SYS");
}

TEST_CASE("NICs: one per RDMA device name, ports, speed, PCI object, socket interfaces", "[nccl]") {
    SECTION("OCI H100: dual-port CX-7 as two RDMA devices on one PCI function") {
        const Node n = load(kFiles[12].file);
        const Nic* a = n.nic("mlx5_0");
        const Nic* b = n.nic("mlx5_1");
        REQUIRE(a);
        REQUIRE(b);
        CHECK(a->pci.to_string() == "0000:0c:00.0");
        CHECK(b->pci.to_string() == "0000:0c:00.0");
        CHECK(a->rdma);
        CHECK(a->usable());
        CHECK(a->speed_gbps == Approx(180));
        REQUIRE(a->ports.size() == 1);
        CHECK(a->ports[0].number == 1);
        REQUIRE(b->ports.size() == 1);
        CHECK(b->ports[0].number == 2);
        CHECK(n.nic("mlx5_2") == nullptr);  // not in the dump
        // GPU 0000:0f:00.0 and mlx5_0 hang off sub-switches of switch 0000:08:00.0: PXB.
        const int g0 = gpu_at(n, "0000:0f:00.0");
        CHECK(gpu_nic_path(n, g0, nic_index(n, "mlx5_0")).label() == "PXB");
        CHECK(gpu_nic_path(n, g0, nic_index(n, "mlx5_3")).label() == "NODE");
        CHECK(gpu_nic_path(n, g0, nic_index(n, "mlx5_9")).label() == "SYS");
    }
    SECTION("eth0 socket interface: not RDMA; listed under both <cpu>s it has no NUMA node") {
        const Node n = load(kFiles[21].file);
        const Nic* e = n.nic("eth0");
        REQUIRE(e);
        CHECK_FALSE(e->rdma);
        CHECK_FALSE(e->usable());
        CHECK(e->pci_object == -1);
        CHECK(e->numa == -1);
        CHECK(e->speed_gbps == Approx(10));
        CHECK(e->netdevs == std::vector<std::string>{"eth0"});
    }
    SECTION("eth0 under a single <cpu> keeps that NUMA node (Azure NC A100 v4)") {
        const Node n = load(kFiles[5].file);
        const Nic* e = n.nic("eth0");
        REQUIRE(e);
        CHECK(e->numa == 0);
        CHECK(e->speed_gbps == Approx(100));
        CHECK(gpu_nic_path(n, 0, 0).label() == "NODE");
        CHECK(gpu_nic_path(n, 1, 0).label() == "SYS");
    }
    SECTION("Slingshot cxi devices are RDMA with their PCI bus ids") {
        const Node n = load(kFiles[10].file);
        const Nic* c = n.nic("cxi3");
        REQUIRE(c);
        CHECK(c->rdma);
        CHECK(c->pci.to_string() == "0000:01:00.0");
        CHECK(c->numa == 3);
        CHECK(c->speed_gbps == Approx(200));
    }
    SECTION("hand-written files: NIC slots without <net> are named by bus id, with a warning") {
        const Node n = load(kFiles[2].file);  // AWS p4d
        const Nic* e = n.nic("0000:10:1b.0");
        REQUIRE(e);
        CHECK(e->rdma);
        CHECK(e->numa == 0);
        bool warned = false;
        for (const auto& w : n.warnings) warned |= w.find("named by their PCI bus id") != std::string::npos;
        CHECK(warned);
        // GPU 0000:10:1c.0 and the EFA NIC 0000:10:1b.0 share switch ffff:ff:01.0.
        CHECK(gpu_nic_path(n, gpu_at(n, "0000:10:1c.0"), nic_index(n, "0000:10:1b.0")).label() == "PIX");
        CHECK(gpu_nic_path(n, gpu_at(n, "0000:10:1c.0"), nic_index(n, "0000:20:1b.0")).label() == "NODE");
        CHECK(gpu_gpu_path(n, gpu_at(n, "0000:10:1c.0"), gpu_at(n, "0000:10:1d.0")).label() == "PIX");
        CHECK(gpu_gpu_path(n, gpu_at(n, "0000:10:1c.0"), gpu_at(n, "0000:90:1c.0")).label() == "SYS");
        // Placeholder switch ids (ffff:ff:01.0) are not real addresses.
        const auto& sw = n.pci[static_cast<size_t>(n.pci[static_cast<size_t>(n.gpus[0].pci_object)].parent)];
        CHECK(sw.kind == PciKind::Bridge);
        for (const auto& o : n.pci)
            if (o.has_address) CHECK(o.address.domain != 0xffff);
    }
    SECTION("GPUs of hand-written files without a vendor are NVIDIA") {
        const Node n = load(kFiles[7].file);  // Azure ND40rs v2
        for (const auto& g : n.gpus) CHECK(g.vendor == Vendor::Nvidia);
    }
}

TEST_CASE("NCCL XML: bad contents give one TopologyError naming the input", "[nccl]") {
    auto error_of = [](const std::string& xml) -> std::string {
        try {
            read_nccl_xml_buffer(xml, "t.xml");
        } catch (const TopologyError& e) {
            return e.what();
        }
        return "";
    };
    const std::string no_gpu = R"(<system version="1"><cpu numaid="0" affinity="ff"><pci busid="0000:01:00.0" class="0x020700"/></cpu></system>)";
    CHECK(error_of(no_gpu).find("t.xml describes no GPUs") != std::string::npos);
    const std::string bad_mask = R"(<system version="1"><cpu numaid="0" affinity="zz"/></system>)";
    CHECK(error_of(bad_mask).find("t.xml line 1: <cpu affinity> is not a hex CPU mask") != std::string::npos);
    const std::string bad_bus =
        R"(<system version="1"><cpu numaid="0" affinity="ff"><pci busid="nope" class="0x030200"><gpu dev="0"/></pci></cpu></system>)";
    CHECK(error_of(bad_bus).find("GPU <pci busid=\"nope\"> is not a PCI bus id") != std::string::npos);
    CHECK(error_of("<html/>").find("not NCCL topology XML (root element <html>)") != std::string::npos);
    CHECK(error_of("hello").find("t.xml is not well-formed XML") != std::string::npos);
    CHECK(error_of(R"(<system version="1"></system>)").find("has no <cpu> element") != std::string::npos);
}

TEST_CASE("NCCL XML: NVLink to a CPU is not a GPU link; BMC VGA is not a GPU", "[nccl]") {
    // POWER9-style: two GPUs, each with NVLink to the CPU (tclass 0x060400) and to each other.
    const std::string xml = R"(<system version="1">
  <cpu numaid="0" affinity="0000ffff">
    <pci busid="0004:04:00.0" class="0x030200" vendor="0x10de">
      <gpu dev="0" sm="70"><nvlink target="0004:05:00.0" count="3" tclass="0x030200"/>
        <nvlink target="ffff:ff:ff.0" count="3" tclass="0x060400"/></gpu></pci>
    <pci busid="0004:05:00.0" class="0x030200" vendor="0x10de">
      <gpu dev="1" sm="70"><nvlink target="0004:04:00.0" count="3" tclass="0x030200"/>
        <nvlink target="ffff:ff:ff.0" count="3" tclass="0x060400"/></gpu></pci>
    <pci busid="0000:03:00.0" class="0x030000" vendor="0x1a03" device="0x2000"/>
  </cpu>
</system>)";
    const Node n = read_nccl_xml_buffer(xml, "p9.xml");
    REQUIRE(n.gpus.size() == 2);
    REQUIRE(n.links.size() == 1);
    CHECK(gpu_gpu_path(n, 0, 1).label() == "NV3");
    CHECK_FALSE(n.links[0].via_switch);
}

TEST_CASE("NCCL XML: a GPU listed twice counts once, with a warning", "[nccl]") {
    const std::string xml = R"(<system version="1"><cpu numaid="0" affinity="ff">
  <pci busid="0000:01:00.0" class="0x030200" vendor="0x10de"><gpu dev="0"/></pci>
  <pci busid="0000:01:00.0" class="0x030200" vendor="0x10de"><gpu dev="1"/></pci>
</cpu></system>)";
    const Node n = read_nccl_xml_buffer(xml, "dup.xml");
    CHECK(n.gpus.size() == 1);
    REQUIRE(n.warnings.size() == 1);
    CHECK(n.warnings[0].find("GPU 0000:01:00.0 is listed twice") != std::string::npos);
}

TEST_CASE("NCCL XML: truncated or damaged dumps give a TopologyError or a node, nothing else", "[nccl]") {
    std::ifstream in(nccl(kFiles[12].file), std::ios::binary);  // OCI H100 dump
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(text.size() > 1000);
    int errors = 0, nodes = 0;
    auto attempt = [&](const std::string& xml) {
        try {
            const Node n = read_nccl_xml_buffer(xml, "damaged.xml");
            CHECK(!n.gpus.empty());
            ++nodes;
        } catch (const TopologyError& e) {
            CHECK(std::string(e.what()).find("damaged.xml") != std::string::npos);
            ++errors;
        }
    };
    for (size_t cut = 0; cut < text.size(); cut += 53) attempt(text.substr(0, cut));
    const char replacements[] = {'<', '>', '"', '&', 'z', '-', '\0', '9'};
    for (size_t pos = 0, k = 0; pos < text.size(); pos += 41, ++k) {
        std::string damaged = text;
        damaged[pos] = replacements[k % sizeof replacements];
        attempt(damaged);
    }
    CHECK(errors > 0);
    CHECK(nodes > 0);
}
