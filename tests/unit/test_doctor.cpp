// gputopo doctor on fake nodes: a shipped topology as hwloc's view, the fake
// NVML library for the driver, a fake sysfs tree for NIC ports.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/nvml_fake.hpp"
#include "topo/doctor.hpp"
#include "topo/mnnvl.hpp"
#include "topo/sources/nvml_source.hpp"
#include "topo/sources/topology_loader.hpp"

using namespace gputopo;
using gputopo_test::FakeNvmlScenario;
namespace fs = std::filesystem;

namespace {

const char* kH200 = "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";
const char* kPerlmutter = "nccl/nersc-perlmutter-gpu-nid001056_4xA100-SXM4-40GB_4xSlingshot-Cassini_EPYC7763_nccl-dump.xml";
const char* kGb300 = "nccl/oci-GB300-NVL72_2trays_2xGrace+4xGB300-per-tray_CX8_nccl-dump-2nodes.xml";
const char* kXe8640 = "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml";

DoctorInputs inputs(const char* topology, bool expect_same) {
    DoctorInputs in;
    in.base_topology_file = gputopo_test::topology(topology);
    if (expect_same) in.expect_file = in.base_topology_file;
    in.live.nvml_library = gputopo_test::fake_nvml_library();
    in.live.sysfs_root = "/nonexistent-sysfs-root";
    REQUIRE(gputopo_test::file_exists(in.live.nvml_library));
    return in;
}

CheckStatus status(const DoctorReport& r, const std::string& name) {
    const DoctorCheck* c = r.check(name);
    REQUIRE(c);
    return c->status;
}

bool mentions(const DoctorReport& r, const std::string& name, const std::string& text) {
    const DoctorCheck* c = r.check(name);
    if (!c) return false;
    if (c->summary.find(text) != std::string::npos) return true;
    for (const auto& d : c->details)
        if (d.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("doctor: a healthy HGX H200 passes against its own reference", "[doctor]") {
    FakeNvmlScenario sc("hgx-h200-nvswitch.nvml");
    DoctorReport r = run_doctor(inputs(kH200, true));
    INFO(doctor_table(r));
    CHECK(r.ok());
    CHECK(r.exit_code() == 0);
    CHECK(status(r, "nvml") == CheckStatus::Ok);
    CHECK(status(r, "gpus") == CheckStatus::Ok);
    CHECK(status(r, "nvlink") == CheckStatus::Ok);
    CHECK(mentions(r, "nvlink", "144 NVLink(s) up"));  // 8 GPUs x 18 links
    CHECK(status(r, "health") == CheckStatus::Ok);
    CHECK(status(r, "numa") == CheckStatus::Ok);
    CHECK(status(r, "fabric") == CheckStatus::Skip);
    CHECK(r.summary().rfind("gputopo doctor: OK", 0) == 0);
}

TEST_CASE("doctor: NVLinks down and a pending row remap", "[doctor]") {
    FakeNvmlScenario sc("hgx-h200-links-down.nvml");
    DoctorReport r = run_doctor(inputs(kH200, true));
    INFO(doctor_table(r));
    CHECK_FALSE(r.ok());
    CHECK(r.exit_code() == 1);
    CHECK(status(r, "nvlink") == CheckStatus::Fail);
    CHECK(mentions(r, "nvlink", "GPU 0000:9b:00.0: 10 of 18 NVLinks down"));
    CHECK(mentions(r, "nvlink", "NV8, expected NV18"));
    CHECK(mentions(r, "nvlink", "GPU 0000:9b:00.0: errors on 4 NVLink(s) (replay 48, recovery 12, CRC 0)"));
    CHECK(mentions(r, "health", "7 of 8 GPU(s) without health findings"));
    CHECK(status(r, "health") == CheckStatus::Warn);
    CHECK(mentions(r, "health", "row remapping pending"));
    CHECK(status(r, "gpus") == CheckStatus::Ok);
    CHECK(r.summary().find("FAIL (nvlink)") != std::string::npos);
}

TEST_CASE("doctor: without a reference, partly down NVLinks still fail", "[doctor]") {
    FakeNvmlScenario sc("hgx-h200-links-down.nvml");
    DoctorReport r = run_doctor(inputs(kH200, false));
    CHECK(status(r, "nvlink") == CheckStatus::Fail);
    CHECK(r.reference.empty());
}

TEST_CASE("doctor: no driver on a GPU node fails, and says why", "[doctor]") {
    FakeNvmlScenario sc("driver-not-loaded.nvml");
    DoctorReport r = run_doctor(inputs(kH200, true));
    CHECK(status(r, "nvml") == CheckStatus::Fail);
    CHECK(mentions(r, "nvml", "Driver Not Loaded"));
    CHECK(status(r, "gpus") == CheckStatus::Ok);  // what hwloc sees still matches
    CHECK(status(r, "nvlink") == CheckStatus::Skip);
    CHECK(r.exit_code() == 1);
}

TEST_CASE("doctor: a lost GPU fails the gpus check", "[doctor]") {
    FakeNvmlScenario sc("nvml-errors.nvml");
    DoctorReport r = run_doctor(inputs(kPerlmutter, true));
    INFO(doctor_table(r));
    CHECK(status(r, "gpus") == CheckStatus::Fail);
    CHECK(mentions(r, "gpus", "GPU 0000:41:00.0: GPU is lost"));
    // The reference's NV4 links to and from the lost GPU are gone.
    CHECK(status(r, "nvlink") == CheckStatus::Fail);
    CHECK(mentions(r, "nvlink", "expected NV4"));
}

TEST_CASE("doctor: GB300 tray in its NVL72 clique", "[doctor]") {
    FakeNvmlScenario sc("gb300-tray0.nvml");
    DoctorReport r = run_doctor(inputs(kGb300, true));
    INFO(doctor_table(r));
    CHECK(status(r, "fabric") == CheckStatus::Ok);
    CHECK(mentions(r, "fabric", "8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f/32766"));
    CHECK(r.ok());
}

TEST_CASE("doctor: NIC ports down or slow, with the fallback named", "[doctor]") {
    char tmpl[] = "/tmp/gputopo-doctor-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    std::string root = tmpl;
    auto port = [&](const std::string& dev, const std::string& bus, const std::string& state, const std::string& rate) {
        fs::path pci = fs::path(root) / "sys/devices" / bus;
        fs::create_directories(pci);
        fs::path d = fs::path(root) / "sys/class/infiniband" / dev;
        fs::create_directories(d / "ports/1");
        fs::create_directory_symlink(pci, d / "device");
        std::ofstream(d / "ports/1/state") << state << "\n";
        std::ofstream(d / "ports/1/link_layer") << "InfiniBand\n";
        std::ofstream(d / "ports/1/rate") << rate << "\n";
    };
    port("mlx5_0", "0000:4d:00.0", "4: ACTIVE", "400 Gb/sec (4X NDR)");
    port("mlx5_1", "0000:4d:00.1", "4: ACTIVE", "400 Gb/sec (4X NDR)");
    port("mlx5_2", "0000:5e:00.0", "1: DOWN", "10 Gb/sec (4X SDR)");
    port("mlx5_3", "0000:da:00.0", "4: ACTIVE", "200 Gb/sec (4X HDR)");
    DoctorInputs in;
    in.base_topology_file = gputopo_test::topology(kXe8640);
    in.live.nvml = false;
    in.live.sysfs_root = root;
    DoctorReport r = run_doctor(in);
    fs::remove_all(root);
    INFO(doctor_table(r));
    CHECK(status(r, "nics") == CheckStatus::Warn);
    CHECK(mentions(r, "nics", "mlx5_2: no port ACTIVE"));
    CHECK(mentions(r, "nics", "mlx5_3 port 1: 200 Gb/s, expected 400"));
    CHECK(mentions(r, "nics", "GPU 1: nearest NIC mlx5_2 (PIX) is down; falling back to"));
    CHECK(mentions(r, "nics", "3 of 4 RDMA NIC(s) with an ACTIVE port"));
    // NVIDIA GPUs but NVML not read: that is a failure of the nvml check.
    CHECK(status(r, "nvml") == CheckStatus::Fail);

    SECTION("against a reference that has the NIC up, a down port fails") {
        Node ref = r.observed;
        for (auto& n : ref.nics)
            for (auto& p : n.ports) p.state = "ACTIVE";
        DoctorInputs in2 = in;
        in2.expected = ref;
        in2.live.sysfs_root = "/nonexistent";  // hwloc's view only: mlx5_1..3 down
        DoctorReport r2 = run_doctor(in2);
        CHECK(status(r2, "nics") == CheckStatus::Fail);
        CHECK(mentions(r2, "nics", "mlx5_3: no port ACTIVE"));
    }
}

TEST_CASE("doctor: an unreadable reference is a failed check, not an exception", "[doctor]") {
    FakeNvmlScenario sc("perlmutter-nv4.nvml");
    DoctorInputs in = inputs(kPerlmutter, false);
    in.expect_file = "/nonexistent/expected.xml";
    DoctorReport r;
    REQUIRE_NOTHROW(r = run_doctor(in));
    CHECK(status(r, "reference") == CheckStatus::Fail);
    CHECK(mentions(r, "reference", "/nonexistent/expected.xml"));
    CHECK(r.exit_code() == 1);
    std::string json = doctor_json(r);
    CHECK(json.find("\"ok\": false") != std::string::npos);
    CHECK(json.find("\"name\": \"reference\"") != std::string::npos);
    CHECK(json.find("\"status\": \"fail\"") != std::string::npos);
}

TEST_CASE("doctor --topology offline: no NVML library is a SKIP, unknown NIC port state is never ACTIVE",
          "[doctor]") {
    // The OCI NCCL dump checked on a machine without the NVIDIA driver (a login node).
    DoctorInputs in;
    in.base_topology_file =
        gputopo_test::topology("nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml");
    in.live.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    in.live.sysfs_root = "/nonexistent-sysfs-root";
    DoctorReport r = run_doctor(in);
    INFO(doctor_table(r));
    CHECK(status(r, "nvml") == CheckStatus::Skip);
    CHECK(mentions(r, "nvml", "offline (a topology file)"));
    CHECK(status(r, "nics") == CheckStatus::Skip);  // 16 NICs, none with a port state
    CHECK(mentions(r, "nics", "16 of 16 RDMA NIC(s) with port state unknown"));
    CHECK_FALSE(mentions(r, "nics", "with an ACTIVE port"));
    CHECK(r.exit_code() == 0);
    // The same machine live (not a file) without its driver still fails.
    DoctorInputs live = in;
    live.base = load_topology_file(in.base_topology_file);
    live.base_topology_file.clear();
    CHECK(status(run_doctor(live), "nvml") == CheckStatus::Fail);
}

namespace {

// A fake IMEX channel directory: channel0 present (a regular file: nothing refuses it), or none.
std::string imex_dir(bool with_channel) {
    char tmpl[] = "/tmp/gputopo-imex-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    if (with_channel) std::ofstream(std::string(tmpl) + "/channel0") << "";
    return tmpl;
}

DoctorInputs mnnvl_inputs(const std::string& dir) {
    DoctorInputs in = inputs(kGb300, false);
    in.mnnvl = true;
    in.imex_dir = dir;
    return in;
}

}  // namespace

TEST_CASE("doctor --mnnvl: NCCL's multi-node NVLink prerequisites on fake GB300 trays", "[doctor][mnnvl]") {
    const std::string ok_dir = imex_dir(true), empty_dir = imex_dir(false);
    SECTION("v3 fabric info, healthy, IMEX channel present: ready") {
        FakeNvmlScenario sc("gb300-tray0.nvml");
        DoctorReport r = run_doctor(mnnvl_inputs(ok_dir));
        INFO(doctor_table(r));
        CHECK(status(r, "mnnvl") == CheckStatus::Ok);
        CHECK(mentions(r, "mnnvl", "8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f/32766"));
        CHECK(r.ok());
        // Without --mnnvl there is no such check.
        DoctorInputs plain = inputs(kGb300, false);
        CHECK(run_doctor(plain).check("mnnvl") == nullptr);
    }
    SECTION("no IMEX channel: NCCL falls back to the network, and the fix is named") {
        FakeNvmlScenario sc("gb300-tray0.nvml");
        DoctorReport r = run_doctor(mnnvl_inputs(empty_dir));
        CHECK(status(r, "mnnvl") == CheckStatus::Fail);
        CHECK(mentions(r, "mnnvl", "no IMEX channel in " + empty_dir));
        CHECK(mentions(r, "mnnvl", "switch/nvidia_imex"));
        DoctorReport gone = run_doctor(mnnvl_inputs(empty_dir + "/none"));
        CHECK(mentions(gone, "mnnvl", "no IMEX channel"));
    }
    SECTION("NCCL_CUMEM_ENABLE=0 / NCCL_MNNVL_ENABLE=0 in the environment: a warning each") {
        FakeNvmlScenario sc("gb300-tray0.nvml");
        DoctorInputs in = mnnvl_inputs(ok_dir);
        in.nccl_cumem_enable = "0";
        in.nccl_mnnvl_enable = "0";
        DoctorReport r = run_doctor(in);
        CHECK(status(r, "mnnvl") == CheckStatus::Warn);
        CHECK(mentions(r, "mnnvl", "NCCL_CUMEM_ENABLE=0 in the environment: NCCL turns cuMem off"));
        CHECK(mentions(r, "mnnvl", "NCCL_MNNVL_ENABLE=0"));
        in.nccl_cumem_enable = "1";
        in.nccl_mnnvl_enable.reset();
        CHECK(status(run_doctor(in), "mnnvl") == CheckStatus::Ok);
    }
    SECTION("v2 driver: v3 refused, v2 read; a degraded-bandwidth mask fails") {
        FakeNvmlScenario sc("gb300-fabric-v2.nvml");
        DoctorReport r = run_doctor(mnnvl_inputs(ok_dir));
        INFO(doctor_table(r));
        CHECK(status(r, "mnnvl") == CheckStatus::Fail);
        CHECK(mentions(r, "mnnvl", "GPU 0009:06:00.0: fabric health: degraded bandwidth"));
        CHECK_FALSE(mentions(r, "mnnvl", "GPU 0008:06:00.0"));
        NvmlSnapshot s = read_nvml(gputopo_test::fake_nvml_library());
        REQUIRE(s.gpus.size() == 4);
        CHECK(s.gpus[0].fabric_version == 2);
        CHECK(s.gpus[1].fabric_health_mask == 1);
        CHECK(s.gpus[1].fabric_health_summary == -1);
        CHECK(s.gpus[0].fabric_clique == 32766);
    }
    SECTION("v1 driver (no versioned call): state and clique, no health mask") {
        FakeNvmlScenario sc("gb300-fabric-v1.nvml");
        NvmlSnapshot s = read_nvml(gputopo_test::fake_nvml_library());
        REQUIRE(s.gpus.size() == 4);
        CHECK(s.gpus[0].fabric_version == 1);
        CHECK(s.gpus[0].fabric_health_mask == -1);
        CHECK(s.gpus[0].fabric_cluster_uuid == "8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f");
        CHECK(status(run_doctor(mnnvl_inputs(ok_dir)), "mnnvl") == CheckStatus::Ok);
    }
    SECTION("degraded (v3): route recovery and limited capacity; registration in progress") {
        FakeNvmlScenario sc("gb300-fabric-degraded.nvml");
        NvmlSnapshot s = read_nvml(gputopo_test::fake_nvml_library());
        REQUIRE(s.gpus.size() == 4);
        CHECK(s.gpus[1].fabric_version == 3);
        CHECK(s.gpus[1].fabric_health_summary == 3);
        DoctorReport r = run_doctor(mnnvl_inputs(ok_dir));
        INFO(doctor_table(r));
        CHECK(status(r, "mnnvl") == CheckStatus::Fail);
        CHECK(mentions(r, "mnnvl", "GPU 0009:06:00.0: fabric health: route recovery in progress"));
        CHECK(mentions(r, "mnnvl", "GPU 0009:06:00.0: fabric health summary limited capacity"));
        CHECK(mentions(r, "mnnvl", "GPU 0018:06:00.0: NVLink fabric registration not complete (state 2)"));
    }
    SECTION("the sentinel clique 32766 in two racks: agreement is on (ClusterUUID, clique)") {
        FakeNvmlScenario sc("gb300-rack2-tray0.nvml");
        DoctorInputs in = mnnvl_inputs(ok_dir);
        in.peers = {"8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f/32766"};  // a tray of the first rack
        DoctorReport r = run_doctor(in);
        CHECK(status(r, "mnnvl") == CheckStatus::Fail);
        CHECK(mentions(r, "mnnvl", "clique 5d1e7a30-2b44-4c8e-8f10-9a8b7c6d5e4f/32766 differs from another node's "
                                   "8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f/32766"));
        in.peers = {"5d1e7a30-2b44-4c8e-8f10-9a8b7c6d5e4f/32766"};  // a tray of its own rack
        CHECK(status(run_doctor(in), "mnnvl") == CheckStatus::Ok);
    }
    SECTION("v4 driver (NVML v615+): several cliques per GPU; the island key stays the legacy clique id") {
        FakeNvmlScenario sc("gb300-fabric-v4.nvml");
        NvmlSnapshot s = read_nvml(gputopo_test::fake_nvml_library());
        REQUIRE(s.gpus.size() == 4);
        const std::vector<std::pair<int, unsigned>> four = {{0, 32766}, {1, 32766}, {2, 7}, {3, 7}};
        CHECK(s.gpus[0].fabric_version == 4);
        CHECK(s.gpus[0].fabric_cliques == four);
        CHECK(s.gpus[0].fabric_clique == 32766);
        CHECK(s.gpus[0].fabric_cluster_uuid == "8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f");
        CHECK(s.gpus[0].fabric_health_summary == 1);
        CHECK(s.gpus[1].fabric_health_mask == 1);
        CHECK(s.gpus[1].fabric_health_summary == 3);
        CHECK(s.gpus[2].fabric_state == 2);  // registering: no clique counts yet
        CHECK(s.gpus[2].fabric_cliques.empty());
        CHECK(s.gpus[2].fabric_clique == -1);
        // numCliques 70 > the array's 64: 64 kept, and said.
        CHECK(s.gpus[3].fabric_cliques.size() == 64);
        REQUIRE(s.gpus[3].errors.size() == 1);
        CHECK(s.gpus[3].errors[0].find("numCliques 70 (expected at most 64)") != std::string::npos);
        DoctorReport r = run_doctor(mnnvl_inputs(ok_dir));
        INFO(doctor_table(r));
        CHECK(status(r, "mnnvl") == CheckStatus::Fail);
        CHECK(mentions(r, "mnnvl", "GPU 0009:06:00.0: fabric health: degraded bandwidth"));
        CHECK(mentions(r, "mnnvl", "GPU 0018:06:00.0: NVLink fabric registration not complete (state 2)"));
        CHECK(mentions(r, "mnnvl", "this node's GPUs list different NVLink cliques (fabric info v4, type:id): "
                                   "GPU 0008:06:00.0 0:32766,1:32766,2:7,3:7, GPU 0019:06:00.0 "));
        CHECK_FALSE(mentions(r, "mnnvl", ", GPU 0009:06:00.0 0:"));  // GPU 1 lists the same cliques
    }
    SECTION("a node without a multi-node fabric: skipped") {
        FakeNvmlScenario sc("hgx-h200-nvswitch.nvml");
        DoctorInputs in = inputs(kH200, false);
        in.mnnvl = true;
        in.imex_dir = empty_dir;
        CHECK(status(run_doctor(in), "mnnvl") == CheckStatus::Skip);
    }
    fs::remove_all(ok_dir);
    fs::remove_all(empty_dir);
}

TEST_CASE("fabric info v4: GPUs of a node that list other cliques are named; agreeing lists are not", "[doctor][mnnvl]") {
    auto gpu = [](const char* pci, std::vector<std::pair<int, unsigned>> cliques) {
        FabricGpu g;
        g.pci = pci;
        g.state = 3;
        g.status = 0;
        g.cluster_uuid = "8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f";
        g.clique = 32766;
        g.cliques = std::move(cliques);
        return g;
    };
    MnnvlInputs in;
    in.imex = {true, 1, 1};
    in.gpus = {gpu("a", {{0, 32766}, {2, 7}}), gpu("b", {{0, 32766}, {2, 7}})};
    CHECK(mnnvl_problems(in).empty());
    in.gpus.push_back(gpu("c", {{0, 32766}, {2, 8}}));
    const auto p = mnnvl_problems(in);
    REQUIRE(p.size() == 1);
    CHECK(p[0].rfind("this node's GPUs list different NVLink cliques (fabric info v4, type:id): GPU a 0:32766,2:7, "
                     "GPU c 0:32766,2:8: NCCL",
                     0) == 0);
    // Before v4 (no lists) nothing is compared.
    for (auto& g : in.gpus) g.cliques.clear();
    CHECK(mnnvl_problems(in).empty());
}

TEST_CASE("fabric health mask: each 2-bit condition that holds is named", "[doctor][mnnvl]") {
    CHECK(fabric_health_problems(0).empty());
    CHECK(fabric_health_problems(-1).empty());
    CHECK(fabric_health_problems(0xAA).empty());  // every field FALSE (2)
    CHECK(fabric_health_problems(0x1) == std::vector<std::string>{"degraded bandwidth"});
    CHECK(fabric_health_problems(0x4 | 0x10 | 0x40).size() == 3);
}
