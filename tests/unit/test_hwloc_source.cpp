// hwloc reader: every shipped hwloc XML, bad inputs, links, distances, live.
// Expected figures below were read from the XML files by hand (PCI class and
// vendor of each PCIDev, OpenFabrics OS devices, NUMANode/Package/Core/PU
// objects, the distance matrices), not from the program's output.
#include <catch2/catch.hpp>
#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/fixtures.hpp"
#include "topo/core/distance.hpp"
#include "topo/core/errors.hpp"
#include "topo/sources/hwloc_convert.hpp"
#include "topo/sources/hwloc_source.hpp"

using namespace gputopo;
using gputopo_test::topology;

namespace {

struct Expected {
    const char* file;
    size_t gpus;
    size_t rdma_nics;
    size_t numa_with_cpus;
    size_t numa_total;
    size_t packages;
    size_t cores;
    int pus;
    std::vector<const char*> bmc_vga;  // display chips that must not be GPUs
};

const std::vector<Expected>& expected() {
    static const std::vector<Expected> table = {
        {"aws-g4dn.metal_2xXeon8259CL_8xT4_EFA_hwloc2.xml", 8, 1, 2, 2, 2, 48, 96, {}},
        {"hp-sl390s-g7_2xXeon-Westmere_3xTeslaM2070_ConnectX2-IB_hwloc2.xml", 3, 1, 2, 2, 2, 12, 24, {"0000:01:03.0"}},
        {"ibm-power8-minsky_2xPOWER8NVL_4xP100-SXM2_NVLinkBW_hwloc2.xml", 4, 0, 2, 2, 2, 8, 16, {}},
        {"llnl-corona-p2_supermicro_2xEPYC7402_8xRadeonProVII_CX6_hwloc2.xml", 8, 1, 2, 2, 2, 48, 96, {"0000:65:00.0"}},
        {"llnl-corona_penguin_2xEPYC7401-NPS4_4xMI50_CX6_hwloc2.xml", 4, 1, 8, 8, 2, 48, 96, {"0000:05:00.0"}},
        {"llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml", 4, 4, 8, 8, 2, 112, 224,
         {"0000:03:00.0"}},
        {"llnl-lassen_ibm-ac922_2xPOWER9_4xV100-SXM2_2xCX5-dualport_hwloc2.xml", 4, 4, 2, 2, 2, 40, 160, {"0002:02:00.0"}},
        {"llnl-pascal_penguin_2xE5-2695v4_2xP100-PCIe_CX5_hwloc2.xml", 2, 1, 2, 2, 2, 36, 72, {"0000:0b:00.0"}},
        {"llnl-rzmanta_ibm-minsky_2xPOWER8NVL_4xP100_2xCX4_hwloc1.xml", 4, 2, 2, 2, 2, 20, 160, {"0005:06:00.0"}},
        {"llnl-sierra_ibm-ac922_2xPOWER9_4xV100-SXM2_2xCX5-dualport_hwloc1.xml", 4, 4, 2, 6, 2, 44, 176, {"0002:02:00.0"}},
        {"llnl-tioga_hpe-cray-ex235a_1xEPYC7A53_4xMI250X-8GCD_4xSlingshot_XGMI_hwloc2.xml", 8, 4, 4, 4, 1, 64, 128, {}},
        {"llnl-tuolumne_hpe-cray-ex255a_4xMI300A-CPX-24part_4xSlingshot_XGMI_hwloc2.12.xml", 24, 4, 4, 4, 4, 96, 192, {}},
        {"llnl-tuolumne_hpe-cray-ex255a_4xMI300A-SPX_4xSlingshot_XGMI_hwloc2.12.xml", 4, 4, 4, 4, 4, 96, 192, {}},
        {"llnl-tuolumne_hpe-cray-ex255a_4xMI300A-TPX-12part_4xSlingshot_XGMI_hwloc2.12.xml", 12, 4, 4, 4, 4, 96, 192, {}},
        {"llnl-ulna_hpe-apollo70_2xThunderX2_2xAMD-GPU_3xCX5_hwloc1.xml", 2, 4, 2, 2, 2, 64, 256, {"0000:1e:00.0"}},
        {"nvidia-dgx2h_2xXeon8174_16xV100-SXM3_12xNVSwitch_NVLinkBW_hwloc2.xml", 16, 0, 2, 2, 2, 4, 4, {}},
        {"supermicro-x9drg_2xE5-2650_3xTeslaM2075+HD7970_CX4-IB_hwloc2.xml", 4, 1, 2, 2, 2, 16, 32, {"0000:05:03.0"}},
    };
    return table;
}

std::string hwloc_file(const std::string& name) { return topology("hwloc/" + name); }

size_t rdma_count(const Node& n) {
    return static_cast<size_t>(std::count_if(n.nics.begin(), n.nics.end(), [](const Nic& c) { return c.rdma; }));
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const TopologyError& e) {
        return e.what();
    }
    return "(no TopologyError)";
}

std::string write_temp(const std::string& name, const std::string& content) {
    std::string path = "/tmp/gputopo-test-hwloc-" + std::to_string(::getpid()) + "-" + name;
    std::ofstream(path) << content;
    return path;
}

size_t nic_index(const Node& n, const std::string& name) {
    for (size_t i = 0; i < n.nics.size(); ++i)
        if (n.nics[i].name == name) return i;
    FAIL("no NIC " << name);
    return 0;
}

}  // namespace

TEST_CASE("every shipped hwloc XML loads with the counts read from the file", "[hwloc]") {
    // The table covers every file of the directory: a new fixture needs a row.
    std::vector<std::string> listed;
    for (const auto& e : expected()) listed.push_back(e.file);
    DIR* dir = ::opendir(topology("hwloc").c_str());
    REQUIRE(dir);
    size_t on_disk = 0;
    while (const dirent* entry = ::readdir(dir)) {
        std::string f(entry->d_name);
        if (f.size() < 4 || f.substr(f.size() - 4) != ".xml") continue;
        ++on_disk;
        CHECK(std::find(listed.begin(), listed.end(), f) != listed.end());
    }
    ::closedir(dir);
    CHECK(on_disk == expected().size());

    for (const auto& e : expected()) {
        INFO(e.file);
        Node n = read_hwloc_xml(hwloc_file(e.file));
        CHECK(n.gpus.size() == e.gpus);
        CHECK(rdma_count(n) == e.rdma_nics);
        size_t with_cpus = static_cast<size_t>(
            std::count_if(n.numa_nodes.begin(), n.numa_nodes.end(), [](const NumaNode& x) { return !x.cpus.empty(); }));
        CHECK(with_cpus == e.numa_with_cpus);
        CHECK(n.numa_nodes.size() == e.numa_total);
        CHECK(n.packages.size() == e.packages);
        CHECK(n.cores.size() == e.cores);
        CHECK(n.cpus.count() == e.pus);
        CHECK(n.source.find(e.file) != std::string::npos);
        // GPU indices follow PCI bus-id order.
        for (size_t i = 0; i < n.gpus.size(); ++i) {
            CHECK(n.gpus[i].index == static_cast<int>(i));
            if (i > 0) CHECK_FALSE(n.gpus[i].pci < n.gpus[i - 1].pci);
            CHECK(n.gpus[i].pci_object >= 0);
            CHECK(n.gpus[i].numa >= 0);
            CHECK_FALSE(n.gpus[i].local_cpus.empty());
        }
        for (const char* bmc : e.bmc_vga)
            for (const auto& g : n.gpus) CHECK(g.pci.to_string() != bmc);
        // Every core's PUs are CPUs of the node and of its NUMA node.
        for (const auto& c : n.cores) {
            CHECK(n.cpus.contains(c.pus));
            const NumaNode* nn = n.numa(c.numa);
            REQUIRE(nn);
            CHECK(nn->cpus.contains(c.pus));
        }
    }
}

TEST_CASE("hwloc XE8640: GPUs, NICs, ports, NVLink and nvidia-smi classes", "[hwloc]") {
    Node n = read_hwloc_xml(hwloc_file("llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    REQUIRE(n.gpus.size() == 4);
    CHECK(n.gpus[0].pci.to_string() == "0000:4e:00.0");
    CHECK(n.gpus[1].pci.to_string() == "0000:5f:00.0");
    CHECK(n.gpus[2].pci.to_string() == "0000:cb:00.0");
    CHECK(n.gpus[3].pci.to_string() == "0000:db:00.0");
    CHECK(n.gpus[0].model == "NVIDIA H100 80GB HBM3");
    CHECK(n.gpus[0].vendor == Vendor::Nvidia);
    std::vector<std::string> names = n.gpus[2].os_names;
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"cuda2", "nvml2", "opencl0d2"});
    // 4e:00.0 hangs below Group0 L#3 = NUMA P#3, cpuset 0x000000ff,0xfc000000,,,0x00fffc00,0x0.
    CHECK(n.gpus[0].numa == 3);
    CHECK(n.gpus[0].local_cpus.to_list() == "42-55,154-167");
    CHECK(n.hostname == "testhost-nvidia");

    // The dual-port CX-6 is two PCI functions, two RDMA devices.
    const Nic* m0 = n.nic("mlx5_0");
    const Nic* m1 = n.nic("mlx5_1");
    REQUIRE(m0);
    REQUIRE(m1);
    CHECK(m0->pci.to_string() == "0000:4d:00.0");
    CHECK(m1->pci.to_string() == "0000:4d:00.1");
    CHECK(m0->netdevs == std::vector<std::string>{"hsi0"});
    REQUIRE(m0->ports.size() == 1);
    CHECK(m0->ports[0].state == "ACTIVE");  // Port1State=4
    CHECK(m0->ports[0].link_layer == "InfiniBand");  // class 0207
    CHECK(m0->usable());
    REQUIRE(n.nic("mlx5_2"));
    CHECK(n.nic("mlx5_2")->ports.at(0).state == "DOWN");  // Port1State=1
    CHECK_FALSE(n.nic("mlx5_2")->usable());
    // The PCI tree: 4d:00.0 <- port 4a:02.0 <- switch 49:00.0 <- root port 48:01.0 <- host bridge [48-4e].
    {
        std::vector<std::string> chain;
        int obj = m0->pci_object;
        REQUIRE(obj >= 0);
        for (int cur = obj; cur >= 0; cur = n.pci[static_cast<size_t>(cur)].parent) {
            const PciObject& o = n.pci[static_cast<size_t>(cur)];
            chain.push_back(o.kind == PciKind::HostBridge ? std::string("host") : o.address.to_string());
        }
        CHECK(chain == std::vector<std::string>{"0000:4d:00.0", "0000:4a:02.0", "0000:49:00.0", "0000:48:01.0", "host"});
        const PciObject& dev = n.pci[static_cast<size_t>(obj)];
        CHECK(dev.kind == PciKind::Device);
        CHECK(dev.class_id == 0x0207);
        CHECK(dev.vendor_id == 0x15b3);
        CHECK(dev.device_id == 0x101b);
        CHECK(n.pci[static_cast<size_t>(dev.parent)].kind == PciKind::Bridge);
        CHECK(n.pci[static_cast<size_t>(dev.parent)].class_id == 0x0604);
        CHECK(dev.numa == 3);
        // The Matrox BMC chip is in the tree as a plain device.
        bool matrox = false;
        for (const auto& o : n.pci)
            if (o.has_address && o.address.to_string() == "0000:03:00.0") matrox = o.vendor_id == 0x102b && o.class_id == 0x0300;
        CHECK(matrox);
    }

    // Ethernet-only NICs are kept, without RDMA.
    REQUIRE(n.nic("eno8303"));
    CHECK_FALSE(n.nic("eno8303")->rdma);

    // NVLinkBandwidth 150000 MB/s between every pair: 6 NVLink4 links of 25 GB/s.
    CHECK(n.links.size() == 6);
    for (int a = 0; a < 4; ++a)
        for (int b = a + 1; b < 4; ++b) {
            const GpuLink* l = n.link(a, b);
            REQUIRE(l);
            CHECK(l->count == 6);
            CHECK(l->kind == LinkKind::NVLink);
            CHECK_FALSE(l->via_switch);
            CHECK(l->bandwidth_gbps == Approx(150.0));
            CHECK(gpu_gpu_path(n, a, b).label() == "NV6");
        }

    // GPU and NIC below one PCIe switch (ports 4a:02.0 / 4a:03.0 of switch 49:00.0).
    CHECK(gpu_nic_path(n, 0, nic_index(n, "mlx5_0")).cls == PathClass::PIX);
    CHECK(gpu_nic_path(n, 0, nic_index(n, "mlx5_1")).cls == PathClass::PIX);
    CHECK(gpu_nic_path(n, 1, nic_index(n, "mlx5_2")).cls == PathClass::PIX);
    CHECK(gpu_nic_path(n, 3, nic_index(n, "mlx5_3")).cls == PathClass::PIX);
    // cb:00.0 (NUMA 7) has no NIC in its tree; the RDMA NICs sit on NUMA 1, 3, 5: all SYS.
    for (const char* nic : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"})
        CHECK(gpu_nic_path(n, 2, nic_index(n, nic)).cls == PathClass::SYS);
    // GPU0 to the NIC of GPU1: another NUMA node.
    CHECK(gpu_nic_path(n, 0, nic_index(n, "mlx5_2")).cls == PathClass::SYS);
}

TEST_CASE("hwloc DGX-2H: NVSwitch matrix gives NV6 through switches for every pair", "[hwloc]") {
    Node n = read_hwloc_xml(hwloc_file("nvidia-dgx2h_2xXeon8174_16xV100-SXM3_12xNVSwitch_NVLinkBW_hwloc2.xml"));
    REQUIRE(n.gpus.size() == 16);
    // Each GPU has 25000 MB/s to each of 6 NVSwitches: 6 V100 links.
    CHECK(n.links.size() == 16 * 15 / 2);
    for (const auto& l : n.links) {
        CHECK(l.via_switch);
        CHECK(l.count == 6);
    }
    CHECK(gpu_gpu_path(n, 0, 15).label() == "NV6");
    // The NVSwitches are PCI devices, not GPUs.
    for (const auto& g : n.gpus) CHECK(g.model == "Tesla V100-SXM3-32GB-H");
}

TEST_CASE("hwloc Minsky: NVLink pairs, GPU-CPU links left out", "[hwloc]") {
    Node n = read_hwloc_xml(hwloc_file("ibm-power8-minsky_2xPOWER8NVL_4xP100-SXM2_NVLinkBW_hwloc2.xml"));
    REQUIRE(n.gpus.size() == 4);
    // nvml0/1 (0002:01, 0003:01) and nvml2/3 (000a:01, 000b:01): 40000 MB/s = 2 P100 links.
    CHECK(n.links.size() == 2);
    REQUIRE(n.link(0, 1));
    REQUIRE(n.link(2, 3));
    CHECK(n.link(0, 1)->count == 2);
    CHECK(n.link(2, 3)->count == 2);
    CHECK_FALSE(n.link(0, 2));
    CHECK_FALSE(n.link(1, 3));
    CHECK(gpu_gpu_path(n, 0, 1).label() == "NV2");
}

TEST_CASE("hwloc Tioga: xGMI links, Slingshot NICs, GPU NUMA placement", "[hwloc]") {
    Node n = read_hwloc_xml(hwloc_file("llnl-tioga_hpe-cray-ex235a_1xEPYC7A53_4xMI250X-8GCD_4xSlingshot_XGMI_hwloc2.xml"));
    REQUIRE(n.gpus.size() == 8);
    // XGMIHops 1 between all 8 GCDs; XGMIBandwidth 100000 MB/s.
    CHECK(n.links.size() == 28);
    for (const auto& l : n.links) {
        CHECK(l.kind == LinkKind::XGMI);
        CHECK(l.count == 1);
        CHECK(l.bandwidth_gbps == Approx(100.0));
    }
    CHECK(gpu_gpu_path(n, 0, 7).label() == "XGMI1");
    // c1:00.0 and c6:00.0 hang below NUMA P#3, d1/d6 below P#0.
    CHECK(n.gpus[0].pci.to_string() == "0000:c1:00.0");
    CHECK(n.gpus[0].numa == 3);
    CHECK(n.gpus[1].numa == 3);
    CHECK(n.gpus[4].numa == 0);
    CHECK(n.gpus[0].os_names == std::vector<std::string>{"rsmi0"});
    CHECK(n.gpus[0].vendor == Vendor::Amd);
    // Slingshot (Cassini, 17db:0501) has only hsi netdevs: RDMA NICs named by them.
    for (const char* name : {"hsi0", "hsi1", "hsi2", "hsi3"}) {
        const Nic* c = n.nic(name);
        REQUIRE(c);
        CHECK(c->rdma);
        CHECK(c->usable());
    }
    CHECK(n.nic("hsi0")->numa == 3);
    REQUIRE(n.nic("ens2"));
    CHECK_FALSE(n.nic("ens2")->rdma);
}

TEST_CASE("hwloc Tuolumne: MI300A partitions are GPUs sharing a PCI function", "[hwloc]") {
    Node cpx = read_hwloc_xml(hwloc_file("llnl-tuolumne_hpe-cray-ex255a_4xMI300A-CPX-24part_4xSlingshot_XGMI_hwloc2.12.xml"));
    REQUIRE(cpx.gpus.size() == 24);
    for (int i = 0; i < 24; ++i) {
        const Gpu& g = cpx.gpus[static_cast<size_t>(i)];
        // rsmi0-5 on 0000:02:00.0, rsmi6-11 on 0001:02:00.0, ...
        CHECK(g.os_names == std::vector<std::string>{"rsmi" + std::to_string(i)});
        CHECK(g.pci.domain == static_cast<uint32_t>(i / 6));
        CHECK(g.pci.bus == 2);
        CHECK(g.numa == i / 6);
        CHECK(g.model == "Aqua Vanjaram [Instinct MI300A]");
    }
    CHECK(cpx.links.size() == 24 * 23 / 2);
    Node tpx = read_hwloc_xml(hwloc_file("llnl-tuolumne_hpe-cray-ex255a_4xMI300A-TPX-12part_4xSlingshot_XGMI_hwloc2.12.xml"));
    REQUIRE(tpx.gpus.size() == 12);
    CHECK(tpx.gpus[3].os_names == std::vector<std::string>{"rsmi3"});
    CHECK(tpx.gpus[3].pci.to_string() == "0001:02:00.0");
    Node spx = read_hwloc_xml(hwloc_file("llnl-tuolumne_hpe-cray-ex255a_4xMI300A-SPX_4xSlingshot_XGMI_hwloc2.12.xml"));
    REQUIRE(spx.gpus.size() == 4);
    CHECK(spx.links.size() == 6);
    for (size_t i = 0; i < 4; ++i) CHECK(spx.gpus[i].pci.to_string() == "000" + std::to_string(i) + ":02:00.0");
}

TEST_CASE("hwloc old formats and memory-only NUMA nodes", "[hwloc]") {
    // hwloc 1.x XML: NUMA P#0, P#8 with CPUs; GPU memory P#252-255 without.
    Node s = read_hwloc_xml(hwloc_file("llnl-sierra_ibm-ac922_2xPOWER9_4xV100-SXM2_2xCX5-dualport_hwloc1.xml"));
    std::vector<int> cpu_nodes, memory_only;
    for (const auto& nn : s.numa_nodes) (nn.cpus.empty() ? memory_only : cpu_nodes).push_back(nn.os_index);
    CHECK(cpu_nodes == std::vector<int>{0, 8});
    CHECK(memory_only == std::vector<int>{252, 253, 254, 255});
    CHECK(s.numa(252)->memory_bytes == 16515072ULL * 1024);
    for (const auto& g : s.gpus) CHECK((g.numa == 0 || g.numa == 8));
    CHECK(s.gpus[0].numa == 0);
    CHECK(s.gpus[3].numa == 8);
    // SMT4 POWER9: 4 PUs per core.
    for (const auto& c : s.cores) CHECK(c.pus.count() == 4);

    // GPUs known only by their DRM nodes (rzmanta, ulna): found by PCI class.
    Node r = read_hwloc_xml(hwloc_file("llnl-rzmanta_ibm-minsky_2xPOWER8NVL_4xP100_2xCX4_hwloc1.xml"));
    REQUIRE(r.gpus.size() == 4);
    CHECK(r.gpus[0].os_names == std::vector<std::string>{"card1", "renderD128"});
    Node u = read_hwloc_xml(hwloc_file("llnl-ulna_hpe-apollo70_2xThunderX2_2xAMD-GPU_3xCX5_hwloc1.xml"));
    REQUIRE(u.gpus.size() == 2);
    CHECK(u.gpus[0].vendor == Vendor::Amd);
    // RoCE CX-4 Lx on an Ethernet-class function is still an RDMA NIC.
    REQUIRE(u.nic("mlx5_1"));
    CHECK(u.nic("mlx5_1")->rdma);
    CHECK(u.nic("mlx5_1")->netdevs == std::vector<std::string>{"enp22s0f0"});
    CHECK(u.nic("mlx5_1")->ports.at(0).link_layer == "Ethernet");  // RoCE: class 0200
    CHECK(u.nic("mlx5_0")->ports.at(0).link_layer == "InfiniBand");
    CHECK_FALSE(u.nic("mlx5_2")->usable());  // Port1State=1

    // EFA: an RDMA device with no netdev.
    Node a = read_hwloc_xml(hwloc_file("aws-g4dn.metal_2xXeon8259CL_8xT4_EFA_hwloc2.xml"));
    REQUIRE(a.nic("rdmap197s0"));
    CHECK(a.nic("rdmap197s0")->rdma);
    CHECK(a.nic("rdmap197s0")->netdevs.empty());
    CHECK(a.nic("rdmap197s0")->numa == 1);
    CHECK(a.nic("rdmap197s0")->ports.at(0).link_layer.empty());

    // IB class 0c06 (ConnectX-2) with two netdevs.
    Node h = read_hwloc_xml(hwloc_file("hp-sl390s-g7_2xXeon-Westmere_3xTeslaM2070_ConnectX2-IB_hwloc2.xml"));
    REQUIRE(h.nic("mlx4_0"));
    CHECK(h.nic("mlx4_0")->netdevs == std::vector<std::string>{"eth2", "ib0"});
}

TEST_CASE("hwloc GPU rule: PCI class and vendor, never a BMC display chip", "[hwloc]") {
    using hwloc_detail::is_gpu_function;
    CHECK(is_gpu_function(0x0302, 0x10de, 0x2330, false));   // H100
    CHECK(is_gpu_function(0x0300, 0x10de, 0x1eb8, false));
    CHECK(is_gpu_function(0x0380, 0x1002, 0x7408, false));   // MI250X
    CHECK(is_gpu_function(0x1200, 0x1002, 0x74a0, false));   // MI300A
    CHECK(is_gpu_function(0x0300, 0x1002, 0x6798, false));   // Radeon HD 7970
    CHECK_FALSE(is_gpu_function(0x0300, 0x1002, 0x515e, false));  // ATI ES1000 (BMC)
    CHECK_FALSE(is_gpu_function(0x0300, 0x1a03, 0x2000, false));  // ASPEED
    CHECK_FALSE(is_gpu_function(0x0300, 0x102b, 0x0536, false));  // Matrox
    CHECK_FALSE(is_gpu_function(0x0680, 0x10de, 0x1ac2, false));  // NVSwitch
    CHECK_FALSE(is_gpu_function(0x0207, 0x15b3, 0x1021, false));  // ConnectX-7
    CHECK_FALSE(is_gpu_function(0x0300, 0x8086, 0x0412, false));  // Intel integrated graphics
    CHECK(is_gpu_function(0x0300, 0x8086, 0x56c0, true));          // Intel GPU with a compute runtime
    CHECK(is_gpu_function(0x0380, 0x8086, 0x0bd5, false));         // Intel data-centre GPU

    // The x9drg's Radeon HD 7970 (84:00.1) is a GPU; its Matrox BMC chip is not.
    Node x = read_hwloc_xml(hwloc_file("supermicro-x9drg_2xE5-2650_3xTeslaM2075+HD7970_CX4-IB_hwloc2.xml"));
    REQUIRE(x.gpus.size() == 4);
    CHECK(x.gpus[3].pci.to_string() == "0000:84:00.1");
    CHECK(x.gpus[3].vendor == Vendor::Amd);
    CHECK(x.gpus[0].model == "Tesla M2075 Dual-Slot Computing Processor Module");  // from PCIDevice
}

TEST_CASE("hwloc bad inputs give one message naming the file and what was expected", "[hwloc]") {
    std::string missing = "/nonexistent/gputopo-no-such-topology.xml";
    std::string m = message_of([&] { read_hwloc_xml(missing); });
    CHECK(m.rfind("gputopo: ", 0) == std::string::npos);  // the front ends add the prefix
    CHECK(m.find(missing) != std::string::npos);
    CHECK(m.find("no such file") != std::string::npos);
    CHECK(m.find("lstopo --of xml") != std::string::npos);

    std::string text = write_temp("notxml.xml", "this is not XML at all\n");
    m = message_of([&] { read_hwloc_xml(text); });
    CHECK(m.find(text) != std::string::npos);
    CHECK(m.find("is not XML") != std::string::npos);
    CHECK(m.find("expected an hwloc XML topology") != std::string::npos);

    std::string empty = write_temp("empty.xml", "");
    m = message_of([&] { read_hwloc_xml(empty); });
    CHECK(m.find(empty) != std::string::npos);
    CHECK(m.find("is empty") != std::string::npos);

    std::string nccl = topology("nccl/aws-p4d.24xlarge_8xA100-SXM4-40GB_4xEFA_2xXeon8275CL_nccl-topo.xml");
    m = message_of([&] { read_hwloc_xml(nccl); });
    CHECK(m.find(nccl) != std::string::npos);
    CHECK(m.find("not an hwloc topology") != std::string::npos);
    CHECK(m.find("NCCL") != std::string::npos);

    std::string other = write_temp("other.xml", "<?xml version=\"1.0\"?>\n<config><a/></config>\n");
    m = message_of([&] { read_hwloc_xml(other); });
    CHECK(m.find(other) != std::string::npos);
    CHECK(m.find("not an hwloc topology (root element <config>") != std::string::npos);

    std::string v3 = gputopo_test::source_dir() + "/tests/fixtures/hwloc-extra/hwloc3-format_1package-2cores.xml";
    m = message_of([&] { read_hwloc_xml(v3); });
    CHECK(m.find(v3) != std::string::npos);
    CHECK(m.find("hwloc 3.0 XML") != std::string::npos);
    CHECK(m.find("is not supported by this hwloc (2.") != std::string::npos);
    CHECK(m.find("lstopo --of xml") != std::string::npos);

    // Well-formed, <topology>, but content hwloc itself rejects.
    std::string bogus = write_temp("bogus.xml",
                                   "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"
                                   "  <object type=\"Bogus\" os_index=\"0\"/>\n</topology>\n");
    m = message_of([&] { read_hwloc_xml(bogus); });
    CHECK(m.find(bogus) != std::string::npos);
    CHECK(m.find("rejected this XML topology") != std::string::npos);

    CHECK(message_of([&] { read_hwloc_xml_buffer("<system version=\"1\"/>", "inline.xml"); })
              .find("inline.xml") != std::string::npos);

    for (const auto& p : {text, empty, other, bogus}) std::remove(p.c_str());
}

TEST_CASE("hwloc 3.0 fixture differs from a loadable file only in its version", "[hwloc]") {
    // Guards the bad-input test: the same content declared 2.0 loads.
    std::ifstream in(gputopo_test::source_dir() + "/tests/fixtures/hwloc-extra/hwloc3-format_1package-2cores.xml");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string xml = ss.str();
    auto pos = xml.find("version=\"3.0\"");
    REQUIRE(pos != std::string::npos);
    xml.replace(pos, 13, "version=\"2.0\"");
    Node n = read_hwloc_xml_buffer(xml, "v2-copy.xml");
    CHECK(n.cores.size() == 2);
    CHECK(n.cpus.to_list() == "0-1");
    CHECK(n.gpus.empty());
}

TEST_CASE("hwloc live: this machine loads, CPUs match the OS, XML round trip", "[hwloc]") {
    Node n = read_hwloc_live();
    CHECK(n.source == "this machine");
    cpu_set_t mask;
    CPU_ZERO(&mask);
    REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &mask)) CHECK(n.cpus.test(c));
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(n.cpus.count() == online);
    CHECK_FALSE(n.numa_nodes.empty());
    CHECK_FALSE(n.cores.empty());
    for (const auto& g : n.gpus) CHECK(g.index >= 0);

    std::string xml = export_hwloc_live_xml();
    CHECK(xml.find("<topology version=\"2.0\">") != std::string::npos);
    Node again = read_hwloc_xml_buffer(xml, "live-export.xml");
    CHECK(again.cpus == n.cpus);
    CHECK(again.gpus.size() == n.gpus.size());
    CHECK(again.nics.size() == n.nics.size());
}

TEST_CASE("hwloc live discovery from an AC922 sysfs dump: GPU memory NUMA nodes", "[hwloc]") {
    // tests/fixtures/topologies/hwloc-fsroot: 6 PCI functions of class 0x030000
    // (vendor ids anonymised to 0), NUMA nodes 0 and 8 with CPUs, and
    // node250-255 (MemTotal 15728640 kB, empty cpulist) holding the GPUs' memory.
    char dir_template[] = "/tmp/gputopo-test-fsroot-XXXXXX";
    char* dir = ::mkdtemp(dir_template);
    REQUIRE(dir);
    std::string tarball =
        topology("hwloc-fsroot/ibm-ac922-power9_6xV100-GPU-NUMA-nodes_fsroot.tar.bz2");
    std::string extract = "python3 -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' '" +
                          tarball + "' '" + dir + "'";
    REQUIRE(std::system(extract.c_str()) == 0);
    std::string root = std::string(dir) + "/nvidiagpunumanodes";
    ::setenv("HWLOC_FSROOT", root.c_str(), 1);
    ::setenv("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES", "1", 1);
    Node n;
    std::string error;
    try {
        n = read_hwloc_live();
    } catch (const std::exception& e) {
        error = e.what();
    }
    ::unsetenv("HWLOC_FSROOT");
    ::unsetenv("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES");
    CHECK(std::system(("rm -rf '" + std::string(dir) + "'").c_str()) == 0);
    REQUIRE(error.empty());

    REQUIRE(n.gpus.size() == 6);
    CHECK(n.gpus[0].pci.to_string() == "0004:05:00.0");
    CHECK(n.gpus[5].pci.to_string() == "0035:05:00.0");
    std::vector<int> with_cpus, memory_only;
    for (const auto& nn : n.numa_nodes) (nn.cpus.empty() ? memory_only : with_cpus).push_back(nn.os_index);
    CHECK(with_cpus == std::vector<int>{0, 8});
    CHECK(memory_only == std::vector<int>{250, 251, 252, 253, 254, 255});
    for (const auto& g : n.gpus) {
        CHECK(g.memory_bytes == 15728640ULL * 1024);
        CHECK((g.numa == 0 || g.numa == 8));  // the CPU NUMA node, never the GPU-memory one
        CHECK_FALSE(g.local_cpus.empty());
    }
    CHECK(n.gpus[0].numa == 0);
    CHECK(n.gpus[5].numa == 8);
}
