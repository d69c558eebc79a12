// NVML source through the real dlopen path, against the fake libnvidia-ml.so.1.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/nvml_fake.hpp"
#include "topo/core/env_names.hpp"
#include "spank/plugstack_args.hpp"
#include "topo/core/errors.hpp"
#include "topo/sources/nvml_source.hpp"
#include "topo/sources/source_merge.hpp"

using namespace gputopo;
using gputopo_test::FakeNvmlScenario;

namespace {

std::string fake_library_or_fail() {
    std::string lib = gputopo_test::fake_nvml_library();
    INFO("fake NVML library: " << lib << " (GPUTOPO_FAKE_NVML, or build it with `make all`)");
    REQUIRE(!lib.empty());
    REQUIRE(gputopo_test::file_exists(lib));
    return lib;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// From an NCCL dump's text: GPU bus id -> (nvlink target -> count), independent of gputopo's readers.
std::map<std::string, std::map<std::string, int>> nccl_dump_nvlinks(const std::string& path) {
    std::map<std::string, std::map<std::string, int>> out;
    std::string text = slurp(path);
    std::regex pci_re("<pci busid=\"([0-9a-f:.]+)\" class=\"0x0302");
    std::regex link_re("<nvlink target=\"([0-9a-f:.]+)\" count=\"([0-9]+)\"");
    std::string current;
    std::istringstream lines(text);
    std::string line;
    std::smatch m;
    while (std::getline(lines, line)) {
        if (std::regex_search(line, m, pci_re)) {
            current = m[1];
            out[current];
        } else if (!current.empty() && std::regex_search(line, m, link_re)) {
            out[current][m[1]] += std::stoi(m[2]);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("NVML: a missing library is 'not available', never an exception", "[nvml]") {
    NvmlSnapshot s;
    REQUIRE_NOTHROW(s = read_nvml("/nonexistent/libnvidia-ml.so.1"));
    CHECK_FALSE(s.available);
    CHECK(s.gpus.empty());
    CHECK(s.reason.find("/nonexistent/libnvidia-ml.so.1") != std::string::npos);
}

TEST_CASE("NVML: a library without the NVML functions is not available", "[nvml]") {
    // libc loads fine but exports no nvmlInit_v2.
    NvmlSnapshot s = read_nvml("libc.so.6");
    CHECK_FALSE(s.available);
    CHECK(s.reason.find("lacks the NVML functions") != std::string::npos);
}

TEST_CASE("NVML: the fake library exists when the test runner names it", "[nvml]") {
    // run_tests.sh exports GPUTOPO_FAKE_NVML; a stale or missing build must fail here, not skip.
    std::string lib = fake_library_or_fail();
    CHECK(lib.find("libnvidia-ml.so.1") != std::string::npos);
}

TEST_CASE("NVML: driver not loaded and no fixture give a reason", "[nvml]") {
    std::string lib = fake_library_or_fail();
    {
        FakeNvmlScenario sc("driver-not-loaded.nvml");
        NvmlSnapshot s = read_nvml(lib);
        CHECK_FALSE(s.available);
        CHECK(s.reason.find("nvmlInit failed") != std::string::npos);
        CHECK(s.reason.find("Driver Not Loaded") != std::string::npos);
        CHECK(s.reason.find("(9)") != std::string::npos);
    }
    unsetenv("GPUTOPO_FAKE_NVML_FIXTURE");
    NvmlSnapshot s = read_nvml(lib);
    CHECK_FALSE(s.available);
}

TEST_CASE("NVML: GPUTOPO_NVML_LIBRARY is for the user's front ends; the library and the plugin never read it", "[nvml]") {
    // The plugin dlopen()s NVML as root: a library named by the job's
    // environment would run as root (issue 12, finding 14).
    std::string lib = fake_library_or_fail();
    FakeNvmlScenario sc("perlmutter-nv4.nvml");
    setenv(kNvmlLibraryEnv, lib.c_str(), 1);
    NvmlSnapshot plain = read_nvml();
    LiveSources user = live_sources_from_environment();
    gputopo::spank::PluginConfig unset = gputopo::spank::parse_plugstack_args({"cache=/var/cache/gputopo"});
    unsetenv(kNvmlLibraryEnv);
    CHECK(plain.library == "libnvidia-ml.so.1");
    // The CLI and the launcher pass it on (cli/input.cpp read_node, launcher/env/node_read.cpp);
    // test_launcher_node_read.cpp runs the built launcher against the NVML that hangs.
    CHECK(user.nvml_library == lib);
    NvmlSnapshot s = read_nvml(user.nvml_library);
    CHECK(s.available);
    CHECK(s.gpus.size() == 4);
    CHECK(gputopo::spank::live_sources(unset).nvml_library.empty());
    // Only the administrator names another library, in plugstack.conf.
    gputopo::spank::PluginConfig c = gputopo::spank::parse_plugstack_args({"nvml=" + lib});
    CHECK(gputopo::spank::live_sources(c).nvml_library == lib);
    CHECK_THROWS_AS(gputopo::spank::parse_plugstack_args({"nvml=relative/libnvidia-ml.so.1"}), gputopo::ParseError);
}

TEST_CASE("NVML that never answers: bounded, one reason, later calls answer at once (issue 20, H6)", "[nvml]") {
    std::string lib = fake_library_or_fail();
    // In a child: the thread stuck in nvmlInit stays there, and this process's
    // later NVML calls would all be refused.
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(20);
        setenv("GPUTOPO_FAKE_NVML_FIXTURE", gputopo_test::nvml_fixture("init-hangs.nvml").c_str(), 1);
        auto t0 = std::chrono::steady_clock::now();
        NvmlSnapshot s = read_nvml(lib, 0.5);
        double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        int bad = 0;
        if (s.available || !s.timed_out) bad |= 1;
        if (s.reason.find("did not answer within 0.5 s (nvml_timeout=)") == std::string::npos) bad |= 2;
        if (first < 0.4 || first > 3) bad |= 4;
        t0 = std::chrono::steady_clock::now();
        NvmlSnapshot again = read_nvml(lib, 5);
        double second = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (again.available || !again.timed_out || second > 0.5) bad |= 8;
        // The model keeps hwloc's view and says why, even without NVIDIA GPUs in it.
        Node n;
        merge_nvml(n, s);
        if (n.warnings.size() != 1 || n.warnings[0].find("did not answer within") == std::string::npos) bad |= 16;
        // The stuck thread must not take a signal sent to the process: the
        // launcher waits for SIGCHLD on a signalfd with it blocked. SIGWINCH
        // (ignored by default) blocked here stays pending unless another
        // thread with it unblocked took it.
        sigset_t w;
        sigemptyset(&w);
        sigaddset(&w, SIGWINCH);
        sigprocmask(SIG_BLOCK, &w, nullptr);
        kill(getpid(), SIGWINCH);
        usleep(300 * 1000);  // time for a thread that does not block it to take it
        timespec limit{0, 0};
        if (sigtimedwait(&w, nullptr, &limit) != SIGWINCH) bad |= 32;
        _exit(bad);
    }
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    INFO("child status " << st << " (exit bits: 1 available, 2 reason, 4 time, 8 second call, 16 warning, 32 a signal went to the stuck thread)");
    CHECK(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("gputopo show with an NVML that hangs ends within GPUTOPO_NVML_TIMEOUT and says so (issue 20, H6)", "[nvml][cli]") {
    std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    std::string lib = fake_library_or_fail();
    FakeNvmlScenario sc("init-hangs.nvml");
    setenv(kNvmlLibraryEnv, lib.c_str(), 1);
    setenv(kNvmlTimeoutEnv, "1", 1);
    auto t0 = std::chrono::steady_clock::now();
    gputopo_test::CliResult r = gputopo_test::run_cli(cli, {"show"}, true);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    unsetenv(kNvmlLibraryEnv);
    unsetenv(kNvmlTimeoutEnv);
    INFO(r.out << r.err);
    CHECK(r.rc == 0);
    CHECK(took < 8);
    CHECK_THAT(r.out + r.err, Catch::Contains("did not answer within 1 s"));
    // A bad value is the default, not a hang or an error.
    setenv(kNvmlTimeoutEnv, "soon", 1);
    CHECK(nvml_timeout_from_environment() == Approx(kDefaultNvmlTimeoutS));
    setenv(kNvmlTimeoutEnv, "2.5", 1);
    CHECK(nvml_timeout_from_environment() == Approx(2.5));
    CHECK(live_sources_from_environment().nvml_timeout_s == Approx(2.5));
    unsetenv(kNvmlTimeoutEnv);
}

TEST_CASE("NVML: 8 H200 behind NVSwitches, links as in the NCCL dump", "[nvml]") {
    std::string lib = fake_library_or_fail();
    FakeNvmlScenario sc("hgx-h200-nvswitch.nvml");
    NvmlSnapshot s = read_nvml(lib);
    REQUIRE(s.available);
    CHECK(s.driver_version == "550.90.07");

    auto dump = nccl_dump_nvlinks(
        gputopo_test::topology("nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml"));
    REQUIRE(dump.size() == 8);
    REQUIRE(s.gpus.size() == dump.size());
    for (const auto& g : s.gpus) {
        INFO("GPU " << g.pci.to_string());
        REQUIRE(dump.count(g.pci.to_string()) == 1);
        CHECK(g.name == "NVIDIA H200");
        CHECK(g.memory_bytes == 141ULL << 30);
        CHECK(g.pci_vendor_id == 0x10de);
        CHECK(g.pci_device_id == 0x2335);
        CHECK(g.minor == static_cast<int>(g.nvml_index));
        CHECK(g.uuid.rfind("GPU-", 0) == 0);
        std::map<std::string, int> per_switch;
        for (const auto& l : g.links) {
            CHECK(l.active);
            CHECK(l.remote == NvlinkRemote::Switch);
            REQUIRE(l.remote_pci_known);
            per_switch[l.remote_pci.to_string()]++;
            CHECK(l.replay_errors == 0);
        }
        CHECK(per_switch == dump[g.pci.to_string()]);
        CHECK(g.fabric_clique == -1);
        CHECK(g.health.ecc_uncorrected_volatile == 0);
        CHECK(g.health.remap_failure == 0);
    }
    // NUMA affinity: the dump puts GPUs 83..9b on numaid 0 (CPUs 0-95), a3..bb on numaid 1 (96-191).
    CHECK(s.find(PciAddress::parse("0000:83:00.0"))->cpus.to_list() == "0-95");
    CHECK(s.find(PciAddress::parse("0000:bb:00.0"))->cpus.to_list() == "96-191");
}

TEST_CASE("NVML: down links, error counters and pending row remaps are reported", "[nvml]") {
    std::string lib = fake_library_or_fail();
    FakeNvmlScenario sc("hgx-h200-links-down.nvml");
    NvmlSnapshot s = read_nvml(lib);
    REQUIRE(s.available);
    const NvmlGpuInfo* bad = s.find(PciAddress::parse("0000:9b:00.0"));
    REQUIRE(bad);
    int up = 0, down = 0;
    int64_t replay = 0;
    for (const auto& l : bad->links) {
        (l.active ? up : down)++;
        replay += l.replay_errors;
    }
    CHECK(up == 8);
    CHECK(down == 10);
    CHECK(replay == 4 * 12);
    CHECK(bad->health.remap_pending == 1);
    CHECK(bad->health.remapped_rows_correctable == 2);
    CHECK(bad->health.ecc_corrected_volatile == 7);
    const NvmlGpuInfo* good = s.find(PciAddress::parse("0000:83:00.0"));
    REQUIRE(good);
    CHECK(good->health.remap_pending == 0);
}

TEST_CASE("NVML: GB300 trays report one fabric cluster and clique", "[nvml]") {
    std::string lib = fake_library_or_fail();
    std::set<std::string> uuids;
    std::set<int> cliques;
    for (const char* tray : {"gb300-tray0.nvml", "gb300-tray1.nvml"}) {
        FakeNvmlScenario sc(tray);
        NvmlSnapshot s = read_nvml(lib);
        REQUIRE(s.available);
        REQUIRE(s.gpus.size() == 4);
        for (const auto& g : s.gpus) {
            CHECK(g.fabric_state == 3);
            CHECK(g.fabric_status == 0);
            uuids.insert(g.fabric_cluster_uuid);
            cliques.insert(g.fabric_clique);
            CHECK(g.links.size() == 18);
            for (const auto& l : g.links) {
                CHECK(l.remote == NvlinkRemote::Switch);
                CHECK_FALSE(l.remote_pci_known);  // the switch trays are not PCI devices of this node
            }
        }
    }
    CHECK(uuids == std::set<std::string>{"8c4a9f2e-11d3-4b7a-9c55-0a1b2c3d4e5f"});
    CHECK(cliques == std::set<int>{32766});
}

TEST_CASE("NVML: per-GPU failures keep the other GPUs and say what failed", "[nvml]") {
    std::string lib = fake_library_or_fail();
    FakeNvmlScenario sc("nvml-errors.nvml");
    NvmlSnapshot s = read_nvml(lib);
    REQUIRE(s.available);
    REQUIRE(s.gpus.size() == 4);
    const NvmlGpuInfo* lost = s.find(PciAddress::parse("0000:41:00.0"));
    REQUIRE(lost);
    CHECK(lost->name.empty());
    CHECK(lost->memory_bytes == 0);
    CHECK(lost->cpus.empty());
    REQUIRE(lost->errors.size() == 1);
    CHECK(lost->errors[0].find("GPU is lost") != std::string::npos);
    const NvmlGpuInfo* ok = s.find(PciAddress::parse("0000:03:00.0"));
    REQUIRE(ok);
    CHECK(ok->name == "NVIDIA A100-SXM4-40GB");
    CHECK(ok->fabric_state == -1);
    CHECK(ok->fabric_clique == -1);
    REQUIRE(ok->links.size() == 4);
    CHECK(ok->links[0].remote == NvlinkRemote::Unknown);
    CHECK(ok->links[0].remote_pci == PciAddress::parse("0000:82:00.0"));
}

TEST_CASE("NVML: Minsky pairs link GPU to GPU and GPU to CPU", "[nvml]") {
    std::string lib = fake_library_or_fail();
    FakeNvmlScenario sc("minsky-pairs.nvml");
    NvmlSnapshot s = read_nvml(lib);
    REQUIRE(s.available);
    REQUIRE(s.gpus.size() == 4);
    for (const auto& g : s.gpus) {
        int to_gpu = 0, to_cpu = 0;
        for (const auto& l : g.links) {
            if (l.remote == NvlinkRemote::Gpu) ++to_gpu;
            if (l.remote == NvlinkRemote::Cpu) ++to_cpu;
        }
        CHECK(to_gpu == 2);
        CHECK(to_cpu == 2);
    }
}
