// Issue 21 (part A) on the shipped topologies: what each fabric's stack reads
// (EFA, Slingshot/CXI, verbs), NIC names from sysfs by PCI address, the site's
// NIC policy, OpenMP placement from each task's CPUs and SMT pairing for
// topologies without cores (NCCL XML).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "launcher/env/binding.hpp"
#include "launcher/options/options.hpp"
#include "spank/plugstack_args.hpp"
#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"
#include "topo/core/distance.hpp"
#include "topo/core/env_names.hpp"
#include "topo/core/errors.hpp"
#include "topo/plan/fabric_env.hpp"
#include "topo/plan/omp_env.hpp"
#include "topo/plan/planner.hpp"
#include "topo/plan/task_env.hpp"
#include "topo/sources/nic_names.hpp"
#include "topo/sources/nic_policy.hpp"
#include "topo/sources/smt_siblings.hpp"
#include "topo/sources/topology_loader.hpp"
#include "topo/core/host.hpp"

using namespace gputopo;
namespace fs = std::filesystem;

namespace {

const char* kP4d = "nccl/aws-p4d.24xlarge_8xA100-SXM4-40GB_4xEFA_2xXeon8275CL_nccl-topo.xml";
const char* kPerlmutter = "nccl/nersc-perlmutter-gpu-nid001056_4xA100-SXM4-40GB_4xSlingshot-Cassini_EPYC7763_nccl-dump.xml";
const char* kTioga = "hwloc/llnl-tioga_hpe-cray-ex235a_1xEPYC7A53_4xMI250X-8GCD_4xSlingshot_XGMI_hwloc2.xml";
const char* kOciH100 = "nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml";
const char* kAzureH100 = "nccl/azure-ND96isr_H100_v5_8xH100-SXM5_8xNDR-IB_2xXeon8480C_nccl-topo.xml";
const char* kGb300 = "nccl/oci-GB300-NVL72_2trays_2xGrace+4xGB300-per-tray_CX8_nccl-dump-2nodes.xml";
const char* kXe8640 = "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml";

Node fixture(const char* rel) { return load_topology_file(gputopo_test::topology(rel)); }

PlanRequest one_task_per_gpu(const Node& node) {
    PlanRequest r;
    for (const auto& g : node.gpus) r.gpus.push_back(g.index);
    r.ntasks = static_cast<int>(r.gpus.size());
    return r;
}

std::map<std::string, std::string> env_of(const Node& node, const Plan& plan, int task, TaskEnvOptions eo = {}) {
    std::map<std::string, std::string> m;
    for (const auto& v : task_env(node, plan, task, eo)) m[v.name] = v.value;
    return m;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t b = 0;
    while (b <= s.size()) {
        size_t e = s.find(sep, b);
        out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
        if (e == std::string::npos) break;
        b = e + 1;
    }
    return out;
}

bool any_value_is_pci_address(const std::map<std::string, std::string>& env) {
    for (const auto& [name, value] : env) {
        if (name == env::kGpuPci) continue;  // the GPUs' bus ids, gputopo's own record
        std::string v = value;
        if (!v.empty() && v[0] == '=') v.erase(0, 1);
        for (auto item : split(v, ',')) {
            item = item.substr(0, item.rfind(':') == 12 ? 12 : item.size());  // "0101:00:00.0:1" (UCX's port)
            PciAddress a;
            if (PciAddress::try_parse(item, a)) return true;
        }
    }
    return false;
}

// A temporary root with sys/bus/pci/devices/ADDR/{infiniband,cxi,net}/NAME and
// sys/devices/system/cpu/cpuN/topology/thread_siblings_list.
class FakeRoot {
public:
    FakeRoot() {
        char tmpl[] = "/tmp/gputopo-fabric-XXXXXX";
        const char* d = mkdtemp(tmpl);
        REQUIRE(d != nullptr);
        root_ = d;
    }
    ~FakeRoot() {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
    FakeRoot(const FakeRoot&) = delete;
    FakeRoot& operator=(const FakeRoot&) = delete;
    const std::string& root() const { return root_; }

    void pci_name(const PciAddress& a, const char* kind, const std::string& name) {
        fs::create_directories(fs::path(root_) / "sys/bus/pci/devices" / a.to_string() / kind / name);
    }
    void siblings(int cpu, const std::string& list) {
        fs::path p = fs::path(root_) / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology";
        fs::create_directories(p);
        std::ofstream(p / "thread_siblings_list") << list << "\n";
    }

private:
    std::string root_;
};

// The CPU cores (node.cores) touched by `cpus`.
std::set<size_t> cores_touched(const Node& node, const CpuSet& cpus) {
    std::set<size_t> out;
    for (size_t c = 0; c < node.cores.size(); ++c)
        if (node.cores[c].pus.intersects(cpus)) out.insert(c);
    return out;
}

}  // namespace

TEST_CASE("fabric: EFA (p4d) gets libfabric's efa variables, never verbs names", "[fabric]") {
    Node node = fixture(kP4d);
    for (const auto& nic : node.nics) CHECK(nic_fabric(node, nic) == Fabric::Efa);
    Plan plan = make_plan(node, one_task_per_gpu(node));
    REQUIRE(node_fabric(node, plan.node_nics) == Fabric::Efa);

    // The file names NICs by PCI address only: nothing names a device yet.
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        auto e = env_of(node, plan, static_cast<int>(t));
        CHECK(e[env::kFiProvider] == "efa");
        CHECK(e.count(env::kFiEfaIface) == 0);
        CHECK(e.count(env::kNcclIbHca) == 0);
        CHECK(e.count(env::kUcxNetDevices) == 0);
        CHECK_FALSE(any_value_is_pci_address(e));
    }
    CHECK(unnamed_nic_warnings(node, plan).size() == 1);

    // On the node, sysfs names them (rdmapXsY, as the efa driver's devices are called).
    FakeRoot root;
    std::map<std::string, PciAddress> addr;
    for (const auto& nic : node.nics) {
        const std::string name = "rdmap" + std::to_string(nic.pci.bus) + "s" + std::to_string(nic.pci.device);
        root.pci_name(nic.pci, "infiniband", name);
        addr[name] = nic.pci;
    }
    CHECK(resolve_nic_names(node, root.root()) == static_cast<int>(node.nics.size()));
    plan = make_plan(node, one_task_per_gpu(node));
    CHECK(unnamed_nic_warnings(node, plan).empty());
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        auto e = env_of(node, plan, static_cast<int>(t));
        REQUIRE(e.count(env::kFiEfaIface) == 1);
        // The task's EFA device is the one behind its GPU's PCIe switch.
        const std::string dev = split(e[env::kFiEfaIface], ',').front();
        REQUIRE(addr.count(dev) == 1);
        const Nic* nic = node.nic(dev);
        REQUIRE(nic != nullptr);
        const size_t idx = static_cast<size_t>(nic - node.nics.data());
        CHECK(gpu_nic_path(node, plan.tasks[t].gpus.front(), idx).label() == "PIX");
        CHECK(e.count(env::kNcclIbHca) == 0);
        CHECK(e.count(env::kUcxNetDevices) == 0);
    }
}

TEST_CASE("fabric: Slingshot (Perlmutter) gets FI_CXI_DEVICE_NAME of the nearest cxi device", "[fabric]") {
    Node node = fixture(kPerlmutter);
    Plan plan = make_plan(node, one_task_per_gpu(node));
    REQUIRE(node_fabric(node, plan.node_nics) == Fabric::Cxi);
    std::set<std::string> used;
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        auto e = env_of(node, plan, static_cast<int>(t));
        CHECK(e[env::kFiProvider] == "cxi");
        REQUIRE(e.count(env::kFiCxiDeviceName) == 1);
        const std::string dev = e[env::kFiCxiDeviceName];
        const Nic* nic = node.nic(dev);
        REQUIRE(nic != nullptr);
        const int g = plan.tasks[t].gpus.front();
        const size_t idx = static_cast<size_t>(nic - node.nics.data());
        // No other NIC is nearer to the task's GPU.
        for (size_t i = 0; i < node.nics.size(); ++i)
            CHECK(gpu_nic_path(node, g, idx).rank() <= gpu_nic_path(node, g, i).rank());
        used.insert(dev);
        CHECK(e.count(env::kNcclIbHca) == 0);
        CHECK(e.count(env::kUcxNetDevices) == 0);
    }
    CHECK(used.size() == node.nics.size());  // 4 GPUs, 4 NICs: one each
}

TEST_CASE("fabric: Slingshot known by netdev (Tioga hsiN) names no CXI device until sysfs does", "[fabric][nicnames]") {
    Node node = fixture(kTioga);
    Plan plan = make_plan(node, one_task_per_gpu(node));
    REQUIRE_FALSE(plan.node_nics.empty());
    REQUIRE(node_fabric(node, plan.node_nics) == Fabric::Cxi);
    auto e = env_of(node, plan, 0);
    CHECK(e[env::kFiProvider] == "cxi");
    CHECK(e.count(env::kFiCxiDeviceName) == 0);  // hsi0 is a netdev, not a CXI device
    CHECK(e.count(env::kNcclIbHca) == 0);
    CHECK(e.count(env::kUcxNetDevices) == 0);

    FakeRoot root;
    std::map<std::string, std::string> cxi_of;  // netdev -> cxi device
    int slingshot = 0;
    for (const auto& nic : node.nics) {
        if (nic_fabric(node, nic) != Fabric::Cxi) continue;  // the node's other (Ethernet) NIC
        const std::string cxi = "cxi" + std::to_string(slingshot++);
        root.pci_name(nic.pci, "cxi", cxi);
        cxi_of[nic.name] = cxi;
    }
    REQUIRE(slingshot == 4);
    const std::string first_netdev = plan.tasks[0].nics.front();
    REQUIRE(resolve_nic_names(node, root.root()) == slingshot);
    plan = make_plan(node, one_task_per_gpu(node));
    e = env_of(node, plan, 0);
    CHECK(e[env::kFiCxiDeviceName] == cxi_of[first_netdev]);  // the same nearest NIC, by its CXI name
    const Nic* nic = node.nic(cxi_of[first_netdev]);
    REQUIRE(nic != nullptr);
    CHECK(std::find(nic->netdevs.begin(), nic->netdevs.end(), first_netdev) != nic->netdevs.end());
}

TEST_CASE("fabric: InfiniBand/RoCE nodes keep the verbs variables and get no libfabric ones", "[fabric]") {
    Node node = fixture(kOciH100);
    Plan plan = make_plan(node, one_task_per_gpu(node));
    REQUIRE(node_fabric(node, plan.node_nics) == Fabric::Verbs);
    auto e = env_of(node, plan, 0);
    CHECK(e[env::kNcclIbHca] == "=" + join_strings(plan.node_nics));
    CHECK(e.count(env::kUcxNetDevices) == 1);
    CHECK(e.count(env::kFiProvider) == 0);
    CHECK(e.count(env::kFiEfaIface) == 0);
    CHECK(e.count(env::kFiCxiDeviceName) == 0);
}

TEST_CASE("fabric: the user's libfabric values are kept", "[fabric]") {
    Node node = fixture(kPerlmutter);
    Plan plan = make_plan(node, one_task_per_gpu(node));
    ResolvedEnv r = keep_user_values(task_env(node, plan, 1, {}), [](const std::string& n) -> std::optional<std::string> {
        if (n == env::kFiProvider) return std::string("tcp");
        if (n == env::kFiCxiDeviceName) return std::string("cxi3");
        return std::nullopt;
    });
    for (const auto& v : r.set) {
        CHECK(v.name != env::kFiProvider);
        CHECK(v.name != env::kFiCxiDeviceName);
    }
    CHECK(r.kept.size() == 2);
}

TEST_CASE("NIC names: Azure ND H100 v5 NICs named by PCI address get sysfs names, or none and one warning",
          "[nicnames]") {
    Node node = fixture(kAzureH100);
    Plan plan = make_plan(node, one_task_per_gpu(node));
    REQUIRE(plan.node_nics.size() == 8);
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        auto e = env_of(node, plan, static_cast<int>(t));
        CHECK(e.count(env::kNcclIbHca) == 0);
        CHECK(e.count(env::kUcxNetDevices) == 0);
        CHECK_FALSE(any_value_is_pci_address(e));
    }
    REQUIRE(unnamed_nic_warnings(node, plan).size() == 1);  // once for the node, naming all eight

    // sysfs knows seven of the eight (mlx5_ib0..6, netdevs ibP...): the eighth stays unnamed.
    FakeRoot root;
    std::map<std::string, std::string> name_of;  // pci -> name
    for (size_t i = 0; i + 1 < node.nics.size(); ++i) {
        const std::string name = "mlx5_ib" + std::to_string(i);
        root.pci_name(node.nics[i].pci, "infiniband", name);
        root.pci_name(node.nics[i].pci, "net", "ibP" + std::to_string(i) + "s1");
        name_of[node.nics[i].pci.to_string()] = name;
    }
    const std::string missing = node.nics.back().pci.to_string();
    CHECK(resolve_nic_names(node, root.root()) == 7);
    plan = make_plan(node, one_task_per_gpu(node));
    auto e = env_of(node, plan, 0);
    REQUIRE(e.count(env::kNcclIbHca) == 1);
    std::vector<std::string> hcas = split(e[env::kNcclIbHca].substr(1), ',');
    CHECK(hcas.size() == 7);
    for (const auto& h : hcas) CHECK(h.rfind("mlx5_ib", 0) == 0);
    CHECK_FALSE(any_value_is_pci_address(e));
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        auto et = env_of(node, plan, static_cast<int>(t));
        CHECK_FALSE(any_value_is_pci_address(et));
        if (et.count(env::kUcxNetDevices))
            CHECK(name_of.count(node.nic(split(et[env::kUcxNetDevices], ':').front())->pci.to_string()) == 1);
    }
    auto w = unnamed_nic_warnings(node, plan);
    REQUIRE(w.size() == 1);
    CHECK(w[0].find(missing) != std::string::npos);
    for (const auto& [pci, name] : name_of) CHECK(w[0].find(pci) == std::string::npos);
}

TEST_CASE("NIC policy: strict lists, one clear message per bad value", "[nicpolicy]") {
    CHECK(parse_nic_list("mlx5_0,bond0,0000:d2:00.0", "x=") == std::vector<std::string>{"mlx5_0", "bond0", "0000:d2:00.0"});
    CHECK_THROWS_WITH(parse_nic_list("", "plugstack.conf: nic_exclude="), Catch::Contains("nic_exclude=: empty list"));
    CHECK_THROWS_WITH(parse_nic_list("mlx5_0,", "plugstack.conf: nic_exclude="), Catch::Contains("empty name"));
    CHECK_THROWS_WITH(parse_nic_list("mlx5_0 mlx5_1", "plugstack.conf: nic_exclude="), Catch::Contains("character ' '"));
    CHECK_THROWS_WITH(parse_nic_list("mlx5_0,mlx5_0", "plugstack.conf: nic_exclude="), Catch::Contains("listed twice"));
    CHECK_THROWS_WITH(spank::parse_plugstack_args({"nic_include=mlx5_0,,mlx5_1"}),
                      Catch::Contains("plugstack.conf: nic_include=mlx5_0,,mlx5_1: empty name"));
    auto c = spank::parse_plugstack_args({"nic_include=mlx5_0,mlx5_1", "nic_exclude=bond0"});
    CHECK(c.nic_policy.include == std::vector<std::string>{"mlx5_0", "mlx5_1"});
    CHECK(c.nic_policy.exclude == std::vector<std::string>{"bond0"});
}

TEST_CASE("NIC policy: excluded NICs leave the plan, NCCL_IB_HCA and UCX_NET_DEVICES", "[nicpolicy]") {
    Node base = fixture(kOciH100);
    Plan before = make_plan(base, one_task_per_gpu(base));
    REQUIRE(before.node_nics.size() >= 2);
    const std::string gone = before.tasks[0].nics.front();  // task 0's nearest NIC

    Node node = base;
    NicPolicy p;
    p.exclude = {gone};
    CHECK(apply_nic_policy(node, p).empty());
    Plan plan = make_plan(node, one_task_per_gpu(node));
    CHECK(std::find(plan.node_nics.begin(), plan.node_nics.end(), gone) == plan.node_nics.end());
    CHECK(plan.node_nics.size() == before.node_nics.size() - 1);
    for (size_t t = 0; t < plan.tasks.size(); ++t) {
        auto e = env_of(node, plan, static_cast<int>(t));
        for (const auto& h : split(e[env::kNcclIbHca].substr(1), ',')) CHECK(h != gone);
        CHECK(split(e[env::kUcxNetDevices], ':').front() != gone);
        for (const auto& n : plan.tasks[t].nics) CHECK(n != gone);
    }

    // include: exactly the listed NICs; a name the node lacks is a warning, not an error.
    Node inc = base;
    NicPolicy q;
    q.include = {before.node_nics[0], before.node_nics[1], "mlx5_99"};
    auto w = apply_nic_policy(inc, q);
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("mlx5_99") != std::string::npos);
    Plan pi = make_plan(inc, one_task_per_gpu(inc));
    CHECK(pi.node_nics == std::vector<std::string>{before.node_nics[0], before.node_nics[1]});
}

TEST_CASE("NIC policy: gputopo plan --nic-exclude shows what the plugin sets", "[nicpolicy][cli]") {
    const char* cli = std::getenv("GPUTOPO_CLI");
    if (!cli) {
        WARN("GPUTOPO_CLI unset (tests/run_tests.sh sets it)");
        return;
    }
    Node node = fixture(kOciH100);
    Plan plan = make_plan(node, one_task_per_gpu(node));
    const std::string gone = plan.node_nics.front();
    auto r = gputopo_test::run_cli(cli, {"plan", "--topology", gputopo_test::topology(kOciH100), "--env",
                                         "--nic-exclude", gone});
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("NCCL_IB_HCA==") != std::string::npos);
    CHECK(r.out.find("=" + gone + ",") == std::string::npos);
    CHECK(r.out.find("," + gone + ",") == std::string::npos);
    CHECK(r.out.find("UCX_NET_DEVICES=" + gone + ":") == std::string::npos);
    auto bad = gputopo_test::run_cli(cli, {"plan", "--topology", gputopo_test::topology(kOciH100), "--nic-exclude", "a,,b"});
    CHECK(bad.rc == 2);
    CHECK(bad.err.find("--nic-exclude a,,b: empty name") != std::string::npos);
}

TEST_CASE("SMT: the OCI H100 NCCL dump pairs CPU i with i+112; tasks never share a core", "[smt]") {
    Node node = fixture(kOciH100);
    REQUIRE(node.cpus.count() == 224);
    REQUIRE(node.cores.size() == 112);
    for (const auto& c : node.cores) {
        REQUIRE(c.pus.count() == 2);
        CHECK(c.pus.last() == c.pus.first() + 112);
    }
    Plan plan = make_plan(node, one_task_per_gpu(node));
    std::map<size_t, int> owner;
    for (const auto& t : plan.tasks)
        for (size_t c : cores_touched(node, t.cpus)) {
            CHECK(owner.count(c) == 0);  // the plan gave tasks 0 and 1 the two threads of cores 0-55
            owner[c] = t.task;
        }
    // Every task holds whole cores: both threads of each.
    for (const auto& t : plan.tasks)
        for (size_t c : cores_touched(node, t.cpus)) CHECK(t.cpus.contains(node.cores[c].pus));
}

TEST_CASE("SMT: a file that is not x86 gets no guessed pairing and says so", "[smt]") {
    for (const char* f : {kGb300, "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml"}) {
        INFO(f);  // arm64 Grace; an x86 file whose NUMA nodes are single ranges (SMT off or unknown)
        Node node = fixture(f);
        CHECK(node.cores.empty());
        Plan plan = make_plan(node, one_task_per_gpu(node));
        bool said = false;
        for (const auto& n : plan.notes) said = said || n.find("no core information") != std::string::npos;
        CHECK(said);
    }
    // A file whose cores are known says nothing of the kind.
    Node oci = fixture(kOciH100);
    for (const auto& n : make_plan(oci, one_task_per_gpu(oci)).notes) CHECK(n.find("no core information") == std::string::npos);
}

TEST_CASE("SMT: x86 rule only where the file matches it", "[smt]") {
    Node n;
    NumaNode a, b;
    a.os_index = 0;
    a.cpus = CpuSet::range(0, 3);
    b.os_index = 1;
    b.cpus = CpuSet::range(4, 7);  // SMT off: one NUMA node per half
    n.numa_nodes = {a, b};
    n.cpus = CpuSet::range(0, 7);
    CHECK_FALSE(cores_from_x86_enumeration(n));
    CHECK(n.cores.empty());
    Node one;  // one NUMA node 0..7: nothing says whether SMT is on
    NumaNode only;
    only.os_index = 0;
    only.cpus = CpuSet::range(0, 7);
    one.numa_nodes = {only};
    one.cpus = only.cpus;
    CHECK_FALSE(cores_from_x86_enumeration(one));
    Node two = n;  // SMT on: each NUMA node one run in each half
    two.numa_nodes[0].cpus = CpuSet::parse_list("0-1,4-5");
    two.numa_nodes[1].cpus = CpuSet::parse_list("2-3,6-7");
    REQUIRE(cores_from_x86_enumeration(two));
    CHECK(two.cores.size() == 4);
    CHECK(two.cores[1].pus == CpuSet::parse_list("1,5"));
    CHECK(two.cores[1].numa == 0);
}

TEST_CASE("SMT: on the node, thread_siblings_list gives the pairs (a file's CPUs must be the node's)", "[smt]") {
    Node node = fixture(kGb300);  // no cores
    REQUIRE(node.cores.empty());
    FakeRoot root;
    // Pair 2k with 2k+1 (interleaved enumeration, as on POWER or some BIOSes).
    const int total = node.cpus.count();
    REQUIRE(total % 2 == 0);
    for (int pu : node.cpus.to_vector())
        root.siblings(pu, std::to_string(pu & ~1) + "," + std::to_string(pu | 1));
    REQUIRE(cores_from_sysfs(node, root.root()));
    CHECK(static_cast<int>(node.cores.size()) == total / 2);
    for (const auto& c : node.cores) CHECK(c.pus.last() == c.pus.first() + 1);

    Node other = fixture(kGb300);
    FakeRoot small;  // a node with other CPUs: not this file's node
    small.siblings(0, "0-1");
    small.siblings(1, "0-1");
    CHECK_FALSE(cores_from_sysfs(other, small.root()));
    CHECK(other.cores.empty());
}

TEST_CASE("OpenMP: threads, places and binding from each task's CPUs (OCI H100, XE8640)", "[omp]") {
    for (const char* f : {kOciH100, kXe8640}) {
        Node node = fixture(f);
        REQUIRE_FALSE(node.cores.empty());
        Plan plan = make_plan(node, one_task_per_gpu(node));
        for (size_t t = 0; t < plan.tasks.size(); ++t) {
            auto e = env_of(node, plan, static_cast<int>(t));
            const CpuSet& cpus = plan.tasks[t].cpus;
            const auto cores = cores_touched(node, cpus);
            CHECK(e[env::kOmpNumThreads] == std::to_string(cores.size()));
            CHECK(e[env::kOmpProcBind] == "close");
            // Each place is one core's PUs of the task; together exactly the task's CPUs.
            CpuSet all;
            const std::string places = e[env::kOmpPlaces];
            REQUIRE(places.size() > 2);
            int n = 0;
            for (size_t b = places.find('{'); b != std::string::npos; b = places.find('{', b + 1)) {
                size_t end = places.find('}', b);
                CpuSet p = CpuSet::parse_list(places.substr(b + 1, end - b - 1));
                REQUIRE(cores_touched(node, p).size() == 1);
                CHECK_FALSE(all.intersects(p));
                all |= p;
                ++n;
            }
            CHECK(n == static_cast<int>(cores.size()));
            CHECK(all == cpus);
        }
    }
}

TEST_CASE("OpenMP: with -c one thread per CPU; the user's values are kept", "[omp]") {
    Node node = fixture(kOciH100);
    PlanRequest r = one_task_per_gpu(node);
    r.cpus_per_task = 6;
    Plan plan = make_plan(node, r);
    TaskEnvOptions eo;
    eo.omp_per_thread = true;
    auto e = env_of(node, plan, 2, eo);
    CHECK(plan.tasks[2].cpus.count() == 6);
    CHECK(e[env::kOmpNumThreads] == "6");
    CHECK(std::count(e[env::kOmpPlaces].begin(), e[env::kOmpPlaces].end(), '{') == 6);

    ResolvedEnv kept = keep_user_values(task_env(node, plan, 2, eo), [](const std::string& n) -> std::optional<std::string> {
        if (n == env::kOmpNumThreads) return std::string("3");
        return std::nullopt;
    });
    REQUIRE(kept.kept.size() == 1);
    CHECK(kept.kept[0].value == "3");
    for (const auto& v : kept.set) CHECK(v.name != env::kOmpNumThreads);

    Plan none = make_plan(node, [&] {
        PlanRequest q = one_task_per_gpu(node);
        q.mode = Mode::None;
        return q;
    }());
    CHECK(task_env(node, none, 0, {}).empty());
}

TEST_CASE("NIC policy: gputopo-launch --nic-exclude binds as the plugin's nic_exclude=", "[nicpolicy][launcher]") {
    const std::string topo = gputopo_test::topology(kOciH100);
    std::map<std::string, std::string> vars{{"SLURM_STEP_GPUS", "0,1,2,3,4,5,6,7"}, {"SLURM_LOCALID", "0"},
                                            {"SLURM_STEP_TASKS_PER_NODE", "8"}, {"SLURM_NODEID", "0"},
                                            {"SLURMD_NODENAME", "n2"}, {"SLURM_STEP_ID", "0"}};
    auto env = [vars](const std::string& n) -> std::optional<std::string> {
        auto it = vars.find(n);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
    const char* argv[] = {"gputopo-launch", "--topology", topo.c_str(), "--nic-exclude", "mlx5_0", "--", "true"};
    launch::Options o = launch::parse_options(7, argv, env);
    REQUIRE(o.nic_policy.exclude == std::vector<std::string>{"mlx5_0"});
    auto hca_of = [&](const NicPolicy& policy) {
        step::NodeSource source;
        source.topology = o.topology;
        source.nic_policy = policy;
        launch::NodeOnce node(source, "n2", "h");
        const launch::TaskPlace place = launch::read_task_place(env, gputopo::host_name());
        launch::LaunchBinding b = launch::compute_binding(o, env, place, node);
        REQUIRE(b.bound);
        for (const auto& v : b.action.set)
            if (v.name == env::kNcclIbHca) return v.value;
        return std::string();
    };
    const std::string with = hca_of(NicPolicy{});
    const std::string without = hca_of(o.nic_policy);
    CHECK(with.rfind("=mlx5_0,", 0) == 0);  // the check below can fail
    CHECK(!without.empty());
    CHECK(without.find("mlx5_0,") == std::string::npos);

    const char* bad[] = {"gputopo-launch", "--nic-exclude", "mlx5_0,,mlx5_1", "--", "true"};
    CHECK_THROWS_WITH(launch::parse_options(5, bad, env), Catch::Contains("--nic-exclude mlx5_0,,mlx5_1: empty name"));
}

TEST_CASE("NIC policy: doctor checks only the NICs the policy keeps (XE8640: three NICs down)", "[nicpolicy][cli]") {
    const char* cli = std::getenv("GPUTOPO_CLI");
    if (!cli) {
        WARN("GPUTOPO_CLI unset (tests/run_tests.sh sets it)");
        return;
    }
    Node node = fixture(kXe8640);
    std::vector<std::string> down;
    for (const auto& n : node.nics)
        if (n.rdma && !n.usable()) down.push_back(n.name);
    REQUIRE(down.size() == 3);
    const std::vector<std::string> base{"doctor", "--topology", gputopo_test::topology(kXe8640), "--sysfs-root",
                                        "/nonexistent-sysfs-root"};
    auto plain = gputopo_test::run_cli(cli, base);
    CHECK(plain.out.find("WARN  nics") != std::string::npos);  // the down NICs count without a policy
    auto args = base;
    args.push_back("--nic-exclude");
    args.push_back(join_strings(down));
    auto excluded = gputopo_test::run_cli(cli, args);
    CHECK(excluded.out.find("OK    nics     1 of 1 RDMA NIC(s) with an ACTIVE port") != std::string::npos);
}
