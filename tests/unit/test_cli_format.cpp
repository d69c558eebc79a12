// The pure renderers behind `gputopo show` and `gputopo plan`
// (topo/plan_format, topo/topology_format, topo/text_table), on nodes and
// plans built by hand here, so every expected string is worked out from the
// inputs of the test itself.
#include <catch2/catch.hpp>

#include <sstream>

#include "tests/unit/json_parse.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/output/text_table.hpp"
#include "topo/output/topology_format.hpp"

using namespace gputopo;
using gputopo_test::JsonParser;
using gputopo_test::JsonValue;

namespace {

TaskBinding task(int id, std::vector<int> gpus, std::vector<std::string> pci, const std::string& cpus,
                 std::vector<int> mems, std::vector<std::string> nics, int island) {
    TaskBinding t;
    t.task = id;
    t.gpus = std::move(gpus);
    for (const auto& p : pci) t.gpu_pci.push_back(PciAddress::parse(p));
    t.cpus = CpuSet::parse_list(cpus);
    t.mems = std::move(mems);
    t.nics = std::move(nics);
    t.island = island;
    return t;
}

Plan two_task_plan() {
    Plan p;
    p.mode = Mode::Island;
    p.tasks.push_back(task(0, {3}, {"0000:5d:00.0"}, "14-27,126-139", {1}, {"mlx5_2"}, 0));
    p.tasks.push_back(task(1, {1, 0}, {"0000:1b:00.0", "0000:18:00.0"}, "0-13,112-125", {0}, {"mlx5_0", "mlx5_1"}, 1));
    p.node_nics = {"mlx5_0", "mlx5_1", "mlx5_2"};
    return p;
}

// Lines of text.
std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

int add_pci(Node& n, PciKind kind, int parent, const char* addr, int numa = -1, const char* cpus = "") {
    PciObject o;
    o.kind = kind;
    o.parent = parent;
    if (addr) {
        o.has_address = true;
        o.address = PciAddress::parse(addr);
    }
    o.numa = numa;
    o.local_cpus = CpuSet::parse_list(cpus);
    n.pci.push_back(o);
    return static_cast<int>(n.pci.size()) - 1;
}

// Two sockets. NUMA 0 has two host bridges: the first with one PCIe switch
// holding GPU 1a, GPU 1c and NIC 1b (named mlx5_1) on three ports; the second
// with GPU 30 behind a root port. NUMA 1 has one host bridge with GPU 90 and
// NIC 91 (named mlx5_0) on two root ports. GPUs 1a and 1c share 4 NVLinks.
Node hand_built_node() {
    Node n;
    n.hostname = "gpu-node-01";
    n.source = "hand-built test node";
    NumaNode a, b;
    a.os_index = 0;
    a.cpus = CpuSet::parse_list("0-7");
    a.memory_bytes = 64ull << 30;
    b.os_index = 1;
    b.cpus = CpuSet::parse_list("8-15");
    n.numa_nodes = {a, b};
    int hb0 = add_pci(n, PciKind::HostBridge, -1, nullptr, 0, "0-7");
    int up = add_pci(n, PciKind::Bridge, hb0, "0000:19:00.0");
    int p1 = add_pci(n, PciKind::Bridge, up, "0000:1a:00.0");  // ports share the device's bus number here
    int p2 = add_pci(n, PciKind::Bridge, up, "0000:1b:00.0");
    int p3 = add_pci(n, PciKind::Bridge, up, "0000:1c:00.0");
    int gA = add_pci(n, PciKind::Device, p1, "0000:1a:00.0");
    int nicA = add_pci(n, PciKind::Device, p2, "0000:1b:00.0");
    int gB = add_pci(n, PciKind::Device, p3, "0000:1c:00.0");
    int hb1 = add_pci(n, PciKind::HostBridge, -1, nullptr, 0, "0-7");
    int rp = add_pci(n, PciKind::Bridge, hb1, "0000:2f:00.0");
    int gC = add_pci(n, PciKind::Device, rp, "0000:30:00.0");
    int hb2 = add_pci(n, PciKind::HostBridge, -1, nullptr, 1, "8-15");
    int rp1 = add_pci(n, PciKind::Bridge, hb2, "0000:8f:00.0");
    int rp2 = add_pci(n, PciKind::Bridge, hb2, "0000:8e:00.0");
    int gD = add_pci(n, PciKind::Device, rp1, "0000:90:00.0");
    int nicB = add_pci(n, PciKind::Device, rp2, "0000:91:00.0");
    const int objs[] = {gA, gB, gC, gD};
    const char* addrs[] = {"0000:1a:00.0", "0000:1c:00.0", "0000:30:00.0", "0000:90:00.0"};
    for (int i = 0; i < 4; ++i) {
        Gpu g;
        g.vendor = Vendor::Nvidia;
        g.model = "Test GPU";
        g.pci = PciAddress::parse(addrs[i]);
        g.pci_object = objs[i];
        n.gpus.push_back(g);
    }
    Nic x;
    x.name = "mlx5_1";
    x.rdma = true;
    x.netdevs = {"ib1"};
    x.pci = PciAddress::parse("0000:1b:00.0");
    x.pci_object = nicA;
    x.ports = {NicPort{1, "ACTIVE", "InfiniBand", 200, -1}};
    Nic y;
    y.name = "mlx5_0";
    y.rdma = true;
    y.netdevs = {"ib0"};
    y.pci = PciAddress::parse("0000:91:00.0");
    y.pci_object = nicB;
    y.ports = {NicPort{1, "DOWN", "InfiniBand", 0, -1}};
    n.nics = {y, x};  // finalize() sorts them by PCI address
    GpuLink l;
    l.a = 0;
    l.b = 1;
    l.count = 4;
    n.links = {l};
    n.finalize();
    return n;
}

}  // namespace

TEST_CASE("index_list compresses sorted runs", "[cli]") {
    CHECK(index_list({}) == "");
    CHECK(index_list({1}) == "1");
    CHECK(index_list({3, 1, 2, 7, 5, 6}) == "1-3,5-7");
    CHECK(index_list({0, 2, 2, 4}) == "0,2,4");
    CHECK(index_list({-1, 5}) == "5");
}

TEST_CASE("plan JSON has exactly the documented fields, in order, on one line", "[cli]") {
    Plan p = two_task_plan();
    p.tasks.pop_back();
    p.node_nics = {"mlx5_0"};
    CHECK(plan_json(p, 0) ==
          "{\"schema_version\": 1, \"mode\": \"island\", \"tasks\": [{\"task\": 0, \"gpus\": [3], \"gpu_pci\": [\"0000:5d:00.0\"], "
          "\"cpus\": \"14-27,126-139\", \"mems\": \"1\", \"nics\": [\"mlx5_2\"], \"island\": 0}], "
          "\"node_nics\": [\"mlx5_0\"], \"notes\": []}\n");
}

TEST_CASE("plan JSON parses back to the plan", "[cli]") {
    Plan p = two_task_plan();
    p.notes = {"2 tasks for 3 GPUs: GPU 2 is \"unused\""};
    JsonValue v = JsonParser::parse(plan_json(p));
    CHECK(v.keys() == std::vector<std::string>{"schema_version", "mode", "tasks", "node_nics", "notes"});
    CHECK(v["mode"].str == "island");
    REQUIRE(v["tasks"].arr.size() == 2);
    const JsonValue& t1 = v["tasks"][1];
    CHECK(t1.keys() == std::vector<std::string>{"task", "gpus", "gpu_pci", "cpus", "mems", "nics", "island"});
    CHECK(t1["task"].num == 1);
    CHECK(t1["gpus"].ints() == std::vector<int>{1, 0});  // order kept
    CHECK(t1["gpu_pci"].strings() == std::vector<std::string>{"0000:1b:00.0", "0000:18:00.0"});
    CHECK(t1["cpus"].str == "0-13,112-125");
    CHECK(t1["mems"].str == "0");
    CHECK(t1["nics"].strings() == std::vector<std::string>{"mlx5_0", "mlx5_1"});
    CHECK(t1["island"].num == 1);
    CHECK(v["node_nics"].strings() == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2"});
    CHECK(v["notes"].strings() == p.notes);
}

TEST_CASE("plan JSON in mode none: empty cpus and mems, island -1, odd NIC names escaped", "[cli]") {
    Plan p;
    p.mode = Mode::None;
    TaskBinding t;
    t.task = 0;
    t.nics = {"we\"ird\\nic"};
    p.tasks.push_back(t);
    const std::string text = plan_json(p, 0);
    CHECK(text.find("\"nics\": [\"we\\\"ird\\\\nic\"]") != std::string::npos);
    JsonValue v = JsonParser::parse(text);
    CHECK(v["mode"].str == "none");
    CHECK(v["tasks"][0]["cpus"].str == "");
    CHECK(v["tasks"][0]["mems"].str == "");
    CHECK(v["tasks"][0]["gpus"].arr.empty());
    CHECK(v["tasks"][0]["island"].num == -1);
    CHECK(v["tasks"][0]["nics"][0].str == "we\"ird\\nic");
}

TEST_CASE("plan table: a header, one aligned line per task, then the notes", "[cli]") {
    Plan p = two_task_plan();
    p.notes = {"something to know"};
    auto l = lines(plan_table(p));
    REQUIRE(l.size() == 5);
    CHECK(l[0] == "mode: island   tasks: 2   node NICs: mlx5_0,mlx5_1,mlx5_2");
    CHECK(l[1] == "TASK  GPUS  GPU PCI                    CPUS           MEMS  NICS           ISLAND");
    CHECK(l[2] == "0     3     0000:5d:00.0               14-27,126-139  1     mlx5_2         0");
    CHECK(l[3] == "1     0-1   0000:1b:00.0,0000:18:00.0  0-13,112-125   0     mlx5_0,mlx5_1  1");
    CHECK(l[4] == "note: something to know");
}

TEST_CASE("text_columns pads to the widest cell and marks empty cells", "[cli]") {
    CHECK(text_columns({{"A", "BB", "C"}, {"xxx", "", "z"}}) == "A    BB  C\nxxx  -   z\n");
    CHECK(text_columns({}) == "");
}

TEST_CASE("topology matrix reads like nvidia-smi topo -m on a hand-built node", "[cli]") {
    Node n = hand_built_node();
    REQUIRE(n.gpus.size() == 4);
    REQUIRE(n.nics.size() == 2);
    REQUIRE(n.nics[0].name == "mlx5_1");  // 0000:1b before 0000:91
    auto l = lines(topology_matrix(n));
    REQUIRE(l.size() >= 7);
    // Worked out from the PCI tree built above.
    CHECK(l[0] == "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity");
    CHECK(l[1] == "GPU0\t X \tNV4\tNODE\tSYS\tPIX\tSYS\t0-7\t0");
    CHECK(l[2] == "GPU1\tNV4\t X \tNODE\tSYS\tPIX\tSYS\t0-7\t0");
    CHECK(l[3] == "GPU2\tNODE\tNODE\t X \tSYS\tNODE\tSYS\t0-7\t0");
    CHECK(l[4] == "GPU3\tSYS\tSYS\tSYS\t X \tSYS\tPHB\t8-15\t1");
    CHECK(l[5] == "NIC0\tPIX\tPIX\tNODE\tSYS\t X \tSYS");
    CHECK(l[6] == "NIC1\tSYS\tSYS\tSYS\tPHB\tSYS\t X ");
    const std::string text = topology_matrix(n);
    CHECK(text.find("  NV#  = Connection traversing a bonded set of # NVLinks") != std::string::npos);
    CHECK(text.find("  NIC0: mlx5_1\n  NIC1: mlx5_0\n") != std::string::npos);
}

TEST_CASE("topology table lists GPUs, NICs with usability, NUMA nodes and islands", "[cli]") {
    Node n = hand_built_node();
    const std::string text = topology_table(n, {0, 0, 1, 2});
    auto l = lines(text);
    CHECK(l[0] == "host: gpu-node-01   source: hand-built test node");
    CHECK(l[1] == "GPUs: 4   NICs: 2 (1 usable RDMA)   NUMA nodes: 2   CPUs: 16");
    CHECK(text.find("GPU3  0000:90:00.0  nvidia  Test GPU  1     8-15") != std::string::npos);
    CHECK(text.find("NIC0  mlx5_1  0000:1b:00.0  ib1      port1 ACTIVE InfiniBand 200Gb/s  0     yes") !=
          std::string::npos);
    CHECK(text.find("NIC1  mlx5_0  0000:91:00.0  ib0      port1 DOWN InfiniBand") != std::string::npos);
    CHECK(text.find("no (no active port)") != std::string::npos);
    CHECK(text.find("\n0     0-7   64.0 GiB\n") != std::string::npos);
    CHECK(text.find("  island 0: GPU 0-1 (NVLink)\n  island 1: GPU 2 (single GPU)\n  island 2: GPU 3 (single GPU)") !=
          std::string::npos);
    CHECK(text.find(topology_matrix(n)) != std::string::npos);
}

TEST_CASE("topology table of a node without GPUs says so", "[cli]") {
    Node n;
    n.source = "this machine";
    NumaNode a;
    a.os_index = 0;
    a.cpus = CpuSet::parse_list("0-3");
    n.numa_nodes = {a};
    n.finalize();
    const std::string text = topology_table(n, {});
    CHECK(text.find("No GPUs found in this machine") != std::string::npos);
    CHECK(text.find("GPU0") == std::string::npos);
    CHECK(text.find("Legend") == std::string::npos);
    JsonValue v = JsonParser::parse(topology_json(n, {}));
    CHECK(v["gpus"].arr.empty());
    CHECK(v["gpu_gpu"].arr.empty());
    CHECK(v["cpus"].str == "0-3");
}

TEST_CASE("topology JSON carries the model and the same matrix as the table", "[cli]") {
    Node n = hand_built_node();
    n.warnings = {"a \"quoted\" warning"};
    JsonValue v = JsonParser::parse(topology_json(n, {0, 0, 1, 2}));
    CHECK(v["hostname"].str == "gpu-node-01");
    CHECK(v["cpus"].str == "0-15");
    REQUIRE(v["gpus"].arr.size() == 4);
    CHECK(v["gpus"][3]["pci"].str == "0000:90:00.0");
    CHECK(v["gpus"][3]["numa"].num == 1);
    CHECK(v["gpus"][3]["local_cpus"].str == "8-15");
    CHECK(v["gpus"][3]["island"].num == 2);
    REQUIRE(v["nics"].arr.size() == 2);
    CHECK(v["nics"][1]["name"].str == "mlx5_0");
    CHECK(v["nics"][1]["usable"].b == false);
    CHECK(v["nics"][0]["usable"].b == true);
    CHECK(v["nics"][0]["ports"][0]["state"].str == "ACTIVE");
    CHECK(v["numa_nodes"][0]["memory_bytes"].num == static_cast<double>(64ull << 30));
    CHECK(v["links"][0]["count"].num == 4);
    CHECK(v["links"][0]["kind"].str == "nvlink");
    CHECK(v["gpu_gpu"][0].strings() == std::vector<std::string>{"X", "NV4", "NODE", "SYS"});
    CHECK(v["gpu_gpu"][3].strings() == std::vector<std::string>{"SYS", "SYS", "SYS", "X"});
    CHECK(v["gpu_nic"][2].strings() == std::vector<std::string>{"NODE", "SYS"});
    CHECK(v["gpu_nic"][3].strings() == std::vector<std::string>{"SYS", "PHB"});
    CHECK(v["nic_nic"][0].strings() == std::vector<std::string>{"X", "SYS"});
    REQUIRE(v["islands"].arr.size() == 3);
    CHECK(v["islands"][0].ints() == std::vector<int>{0, 1});
    CHECK(v["warnings"][0].str == "a \"quoted\" warning");
}
