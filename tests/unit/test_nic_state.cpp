// NIC port state from a fake sysfs tree, RoCE v2 GID choice, merging into
// the model, storage NICs and the nearest-NIC fallback.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/unit/fixtures.hpp"
#include "topo/plan/nic_selection.hpp"
#include "topo/sources/nic_state.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"
#include "topo/sources/source_merge.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;
namespace fs = std::filesystem;

namespace {

// A temporary fake root with sys/class/infiniband/<dev>/... entries.
class FakeSysfs {
public:
    FakeSysfs() {
        char tmpl[] = "/tmp/gputopo-sysfs-XXXXXX";
        const char* d = mkdtemp(tmpl);
        REQUIRE(d != nullptr);
        root_ = d;
    }
    ~FakeSysfs() {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
    FakeSysfs(const FakeSysfs&) = delete;
    FakeSysfs& operator=(const FakeSysfs&) = delete;

    const std::string& root() const { return root_; }

    // An RDMA device on PCI function `bus`, with netdev `netdev`.
    void device(const std::string& name, const std::string& bus, const std::string& netdev) {
        fs::path pci = fs::path(root_) / "sys/devices/pci0000:00" / bus;
        fs::create_directories(pci / "net" / netdev);
        fs::path dev = ib(name);
        fs::create_directories(dev / "ports");
        fs::create_directory_symlink(pci, dev / "device");
    }
    void port(const std::string& name, int n, const std::string& state, const std::string& layer,
              const std::string& rate) {
        fs::path p = ib(name) / "ports" / std::to_string(n);
        fs::create_directories(p / "gids");
        fs::create_directories(p / "gid_attrs/types");
        write(p / "state", state + "\n");
        write(p / "phys_state", state.find("ACTIVE") != std::string::npos ? "5: LinkUp\n" : "3: Disabled\n");
        write(p / "link_layer", layer + "\n");
        write(p / "rate", rate + "\n");
    }
    void gid(const std::string& name, int port, int index, const std::string& gid, const std::string& type) {
        fs::path p = ib(name) / "ports" / std::to_string(port);
        write(p / "gids" / std::to_string(index), gid + "\n");
        write(p / "gid_attrs/types" / std::to_string(index), type + "\n");
    }

private:
    fs::path ib(const std::string& name) const { return fs::path(root_) / "sys/class/infiniband" / name; }
    static void write(const fs::path& p, const std::string& text) {
        std::ofstream out(p);
        out << text;
    }
    std::string root_;
};

const char* kZeroGid = "0000:0000:0000:0000:0000:0000:0000:0000";

// The RoCE port of a typical ConnectX: v1 and v2 GIDs for the link-local
// address, then v1 and v2 for the IPv4 address, then empty entries.
void roce_port(FakeSysfs& fs_, const std::string& dev, const std::string& ip_gid) {
    fs_.port(dev, 1, "4: ACTIVE", "Ethernet", "200 Gb/sec (4X HDR)");
    fs_.gid(dev, 1, 0, "fe80:0000:0000:0000:1070:fdff:fe34:5678", "IB/RoCE v1");
    fs_.gid(dev, 1, 1, "fe80:0000:0000:0000:1070:fdff:fe34:5678", "RoCE v2");
    if (!ip_gid.empty()) {
        fs_.gid(dev, 1, 2, ip_gid, "IB/RoCE v1");
        fs_.gid(dev, 1, 3, ip_gid, "RoCE v2");
    }
    fs_.gid(dev, 1, 4, kZeroGid, "");
}

}  // namespace

TEST_CASE("NIC state: sysfs ports, link layer, rate and PCI address", "[nic]") {
    FakeSysfs s;
    s.device("mlx5_0", "0000:4d:00.0", "ibs2f0");
    s.port("mlx5_0", 1, "4: ACTIVE", "InfiniBand", "400 Gb/sec (4X NDR)");
    s.device("mlx5_1", "0000:4d:00.1", "ibs2f1");
    s.port("mlx5_1", 1, "1: DOWN", "InfiniBand", "10 Gb/sec (4X SDR)");
    auto st = read_nic_state(s.root());
    REQUIRE(st.size() == 2);
    CHECK(st[0].name == "mlx5_0");
    CHECK(st[0].pci_known);
    CHECK(st[0].pci == PciAddress::parse("0000:4d:00.0"));
    CHECK(st[0].netdevs == std::vector<std::string>{"ibs2f0"});
    REQUIRE(st[0].ports.size() == 1);
    CHECK(st[0].ports[0].number == 1);
    CHECK(st[0].ports[0].state == "ACTIVE");
    CHECK(st[0].ports[0].phys_state == "LinkUp");
    CHECK(st[0].ports[0].link_layer == "InfiniBand");
    CHECK(st[0].ports[0].rate_gbps == 400);
    CHECK(st[0].ports[0].roce_v2_gid_index == -1);
    CHECK(st[1].ports[0].state == "DOWN");
}

TEST_CASE("NIC state: no sysfs is an empty answer, not an error", "[nic]") {
    CHECK(read_nic_state("/nonexistent-root").empty());
}

TEST_CASE("NIC state: RoCE v2 GID index prefers the IPv4-mapped RoCE v2 entry", "[nic]") {
    FakeSysfs s;
    s.device("mlx5_0", "0000:17:00.0", "ens1f0np0");
    roce_port(s, "mlx5_0", "0000:0000:0000:0000:0000:ffff:0a00:0005");
    auto st = read_nic_state(s.root());
    REQUIRE(st.size() == 1);
    REQUIRE(st[0].ports.size() == 1);
    CHECK(st[0].ports[0].link_layer == "Ethernet");
    CHECK(st[0].ports[0].roce_v2_gid_index == 3);
    CHECK(st[0].ports[0].roce_v2_gid == "0000:0000:0000:0000:0000:ffff:0a00:0005");

    SECTION("choose_roce_v2_gid on its own") {
        std::vector<GidEntry> g = {{0, "fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1"},
                                   {1, "fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"},
                                   {5, "fd00:0000:0000:0000:0000:0000:0000:0009", "RoCE v2"},
                                   {7, "0000:0000:0000:0000:0000:ffff:c0a8:0101", "RoCE v2"}};
        CHECK(choose_roce_v2_gid(g) == 7);
        g.pop_back();
        CHECK(choose_roce_v2_gid(g) == 5);  // a global IPv6 GID
        g.pop_back();
        CHECK(choose_roce_v2_gid(g) == -1);  // link-local only: no routable address
        CHECK(choose_roce_v2_gid({}) == -1);
    }
}

TEST_CASE("NIC state: merged into the XE8640 model, a down nearest NIC falls back", "[nic]") {
    // hwloc/llnl-dell-xe8640: GPU 1 (0000:5f:00.0) shares a PCIe switch (PIX) with mlx5_2 only,
    // GPU 3 (0000:db:00.0) with mlx5_3 only. The export itself records Port1State=4 (ACTIVE) for
    // mlx5_0 and 1 (DOWN) for mlx5_1, mlx5_2 and mlx5_3.
    Node node = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    auto fb0 = nic_fallbacks(node);
    REQUIRE(fb0.size() == 2);
    CHECK(fb0[0].gpu == 1);
    CHECK(fb0[0].lost == std::vector<std::string>{"mlx5_2"});
    CHECK(fb0[0].fallback == std::vector<std::string>{"mlx5_0"});
    CHECK(fb0[1].gpu == 3);
    CHECK(fb0[1].lost == std::vector<std::string>{"mlx5_3"});

    // Live state: everything up but mlx5_2.
    FakeSysfs s;
    s.device("mlx5_0", "0000:4d:00.0", "ibs2f0");
    s.port("mlx5_0", 1, "4: ACTIVE", "InfiniBand", "200 Gb/sec (4X HDR)");
    s.device("mlx5_1", "0000:4d:00.1", "ibs2f1");
    s.port("mlx5_1", 1, "4: ACTIVE", "InfiniBand", "200 Gb/sec (4X HDR)");
    s.device("mlx5_2", "0000:5e:00.0", "ibp94s0");
    s.port("mlx5_2", 1, "1: DOWN", "InfiniBand", "10 Gb/sec (4X SDR)");
    s.device("mlx5_3", "0000:da:00.0", "ibp218s0");
    s.port("mlx5_3", 1, "4: ACTIVE", "InfiniBand", "400 Gb/sec (4X NDR)");
    merge_nic_state(node, read_nic_state(s.root()));

    const Nic* down = node.nic("mlx5_2");
    REQUIRE(down);
    CHECK_FALSE(down->usable());
    CHECK(node.nic("mlx5_3")->speed_gbps == 400);
    CHECK(node.nic("mlx5_3")->usable());
    // The model gained no NIC: every sysfs device matched hwloc's by name.
    CHECK(node.nics.size() == 6);

    std::vector<size_t> gpu3 = nearest_nics(node, 3);
    REQUIRE(gpu3.size() == 1);
    CHECK(node.nics[gpu3[0]].name == "mlx5_3");
    std::vector<size_t> gpu1 = nearest_nics(node, 1);
    REQUIRE_FALSE(gpu1.empty());
    for (size_t i : gpu1) CHECK(node.nics[i].name != "mlx5_2");

    auto fb = nic_fallbacks(node);
    REQUIRE(fb.size() == 1);
    CHECK(fb[0].gpu == 1);
    CHECK(fb[0].lost == std::vector<std::string>{"mlx5_2"});
    CHECK(fb[0].lost_path == "PIX");
    CHECK(fb[0].fallback == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_3"});
    CHECK(fb[0].fallback_path == "SYS");
    CHECK(describe(fb[0]) == "GPU 1: nearest NIC mlx5_2 (PIX) is down; falling back to mlx5_0,mlx5_1,mlx5_3 (SYS)");
}

TEST_CASE("NIC state: storage NICs and plain management Ethernet stay out of GPU traffic", "[nic]") {
    Node node = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    for (auto& n : node.nics)
        for (auto& p : n.ports) p.state = "ACTIVE";  // storage is the only reason left out
    auto unmatched = mark_storage_nics(node, {"ibp218s0", "0000:4d:00.1", "mlx9_9"});
    CHECK(unmatched == std::vector<std::string>{"mlx9_9"});
    CHECK(node.nic("mlx5_3")->storage);
    CHECK(node.nic("mlx5_1")->storage);
    CHECK_FALSE(node.nic("mlx5_0")->storage);
    auto nics = usable_node_nics(node);
    CHECK(nics == std::vector<std::string>{"mlx5_0", "mlx5_2"});

    // A RoCE device with only link-local GIDs (no IP address) is plain Ethernet.
    Node n2 = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    FakeSysfs s;
    s.device("mlx5_0", "0000:4d:00.0", "ens2f0np0");
    roce_port(s, "mlx5_0", "0000:0000:0000:0000:0000:ffff:0a00:0007");
    s.device("mlx5_1", "0000:4d:00.1", "ens2f1np1");
    roce_port(s, "mlx5_1", "");
    merge_nic_state(n2, read_nic_state(s.root()));
    CHECK(n2.nic("mlx5_0")->usable());
    CHECK(n2.nic("mlx5_0")->ports.at(0).roce_v2_gid_index == 3);
    CHECK_FALSE(n2.nic("mlx5_1")->usable());
    bool warned = false;
    for (const auto& w : n2.warnings) warned = warned || w.find("mlx5_1: Ethernet") != std::string::npos;
    CHECK(warned);
}

TEST_CASE("NIC state: node-wide RoCE GID index for NCCL_IB_GID_INDEX", "[nic]") {
    Node node = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    CHECK(node_roce_gid_index(node) == -1);  // InfiniBand / unknown: NCCL's default stands
    FakeSysfs s;
    for (auto [dev, bus] : {std::pair<const char*, const char*>{"mlx5_0", "0000:4d:00.0"},
                            {"mlx5_1", "0000:4d:00.1"}, {"mlx5_2", "0000:5e:00.0"}, {"mlx5_3", "0000:da:00.0"}}) {
        s.device(dev, bus, std::string("eth_") + dev);
        roce_port(s, dev, "0000:0000:0000:0000:0000:ffff:0a00:0011");
    }
    merge_nic_state(node, read_nic_state(s.root()));
    CHECK(node_roce_gid_index(node) == 3);
    // One NIC whose IPv4 GID sits elsewhere: no single value fits all, leave it to the user.
    node.nics[2].ports[0].roce_v2_gid_index = 5;
    CHECK(node_roce_gid_index(node) == -1);
}

TEST_CASE("NIC state: RoCE nodes get NCCL_IB_GID_INDEX in the task environment, IB nodes do not", "[nic]") {
    Node node = load_topology_file(gputopo_test::topology(
        "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml"));
    PlanRequest req;
    req.gpus = {0, 1, 2, 3};
    req.ntasks = 4;
    auto gid_var = [](const Node& n, const Plan& p) -> std::string {
        for (const auto& v : task_env(n, p, 0, TaskEnvOptions())) {
            if (v.name == "NCCL_IB_GID_INDEX") {
                CHECK(v.user_wins);  // a user's own value is kept
                return v.value;
            }
        }
        return "";
    };
    CHECK(gid_var(node, make_plan(node, req)) == "");
    FakeSysfs s;
    for (auto [dev, bus] : {std::pair<const char*, const char*>{"mlx5_0", "0000:4d:00.0"},
                            {"mlx5_1", "0000:4d:00.1"}, {"mlx5_2", "0000:5e:00.0"}, {"mlx5_3", "0000:da:00.0"}}) {
        s.device(dev, bus, std::string("eth_") + dev);
        roce_port(s, dev, "0000:0000:0000:0000:0000:ffff:0a00:0011");
    }
    merge_nic_state(node, read_nic_state(s.root()));
    CHECK(gid_var(node, make_plan(node, req)) == "3");
}
