// End-to-end: the built `gputopo nccl-topo` and `gputopo doctor` (GPUTOPO_CLI,
// exported by tests/run_tests.sh), with the fake NVML library.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/json_parse.hpp"
#include "tests/unit/nvml_fake.hpp"
#include "topo/sources/nccl_xml_source.hpp"

using gputopo_test::FakeNvmlScenario;
using gputopo_test::JsonParser;
using gputopo_test::JsonValue;
using gputopo_test::cli_or_skip;
using gputopo_test::run_cli;
using gputopo_test::slurp;

namespace {

const char* kH200 = "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";

}  // namespace

TEST_CASE("gputopo nccl-topo writes a file NCCL's format reader takes back", "[nccltopo][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kH200);
    char dir[] = "/tmp/gputopo-g-nccl-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string file = std::string(dir) + "/nccl-topo.xml";
    gputopo_test::CliResult r = run_cli(cli, {"nccl-topo", "--topology", topo, "-o", file});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(r.out.empty());
    gputopo::Node n = gputopo::read_nccl_xml(file);
    CHECK(n.gpus.size() == 8);
    CHECK(n.links.size() == 28);
    gputopo_test::CliResult s = run_cli(cli, {"nccl-topo", "--topology", topo, "-o", "-"});
    CHECK(s.rc == 0);
    CHECK(s.out == slurp(file));
    unlink(file.c_str());
    rmdir(dir);

    gputopo_test::CliResult bad = run_cli(cli, {"nccl-topo", "--topology", topo});
    CHECK(bad.rc == 2);
    CHECK(bad.err == "gputopo: nccl-topo needs -o FILE (the NCCL topology file to write; '-' for standard output)\n");
    gputopo_test::CliResult missing = run_cli(cli, {"nccl-topo", "--topology", "/nonexistent.xml", "-o", "-"});
    CHECK(missing.rc == 1);
    CHECK(missing.err.find("/nonexistent.xml") != std::string::npos);
}

TEST_CASE("gputopo doctor: exit status and JSON on healthy and degraded nodes", "[doctor][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string lib = gputopo_test::fake_nvml_library();
    REQUIRE(gputopo_test::file_exists(lib));
    const std::string topo = gputopo_test::topology(kH200);
    const std::vector<std::string> common = {"doctor", "--topology", topo, "--expect", topo, "--nvml-library", lib,
                                             "--sysfs-root", "/nonexistent"};
    {
        FakeNvmlScenario sc("hgx-h200-nvswitch.nvml");
        std::vector<std::string> a = common;
        gputopo_test::CliResult r = run_cli(cli, a);
        INFO(r.out << r.err);
        CHECK(r.rc == 0);
        CHECK(r.out.find("gputopo doctor: OK") != std::string::npos);
    }
    {
        FakeNvmlScenario sc("hgx-h200-links-down.nvml");
        std::vector<std::string> a = common;
        a.push_back("--format");
        a.push_back("json");
        gputopo_test::CliResult r = run_cli(cli, a);
        INFO(r.out << r.err);
        CHECK(r.rc == 1);
        JsonValue v = JsonParser::parse(r.out);
        CHECK_FALSE(v["ok"].b);
        CHECK(v["exit_code"].num == 1);
        bool nvlink_failed = false;
        for (const auto& c : v["checks"].arr)
            if (c["name"].str == "nvlink") nvlink_failed = c["status"].str == "fail";
        CHECK(nvlink_failed);
    }
    gputopo_test::CliResult bad = run_cli(cli, {"doctor", "--format", "yaml"});
    CHECK(bad.rc == 2);
    CHECK(bad.err.find("--format") != std::string::npos);
}

TEST_CASE("gputopo doctor: a bad command line or an unreadable reference is exit 2, one line", "[doctor][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kH200);
    gputopo_test::CliResult missing = run_cli(cli, {"doctor", "--topology", topo, "--expect", "/nonexistent/h200.xml"});
    CHECK(missing.rc == 2);
    CHECK(missing.out.empty());
    CHECK(missing.err.find("/nonexistent/h200.xml") != std::string::npos);
    CHECK(missing.err.rfind("gputopo: --expect: ", 0) == 0);
    CHECK(std::count(missing.err.begin(), missing.err.end(), '\n') == 1);
    char dir[] = "/tmp/gputopo-doctor-ref-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string junk = std::string(dir) + "/junk.xml";
    std::ofstream(junk) << "not a topology\n";
    gputopo_test::CliResult bad = run_cli(cli, {"doctor", "--topology", topo, "--expect", junk});
    CHECK(bad.rc == 2);
    CHECK(bad.err.find(junk) != std::string::npos);
    unlink(junk.c_str());
    rmdir(dir);
    gputopo_test::CliResult opt = run_cli(cli, {"doctor", "--exepct", topo});
    CHECK(opt.rc == 2);
    // A readable reference still names the file it was compared with.
    gputopo_test::CliResult ok = run_cli(cli, {"doctor", "--topology", topo, "--expect", topo, "--nvml-library",
                                               "/nonexistent/libnvidia-ml.so.1", "--sysfs-root", "/nonexistent"});
    CHECK(ok.rc != 2);
    CHECK(ok.out.find("reference: " + topo + "\n") != std::string::npos);
}

// etc/gputopo-healthcheck.sh with the built gputopo and a stand-in scontrol
// and logger on PATH: exit 2 (a mistyped GPUTOPO_EXPECT) drains nothing and
// is logged at err priority and on stderr; exit 1 (a failed check) drains.
TEST_CASE("gputopo-healthcheck.sh: never drains on exit 2, drains on exit 1", "[doctor][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    char dir[] = "/tmp/gputopo-hc-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string d = dir, calls = d + "/calls", err = d + "/err";
    for (const char* tool : {"scontrol", "logger"}) {
        const std::string p = d + "/" + tool;
        std::ofstream(p) << "#!/bin/sh\nprintf '" << tool << " %s\\n' \"$*\" >> " << calls << "\ncat >> " << calls
                         << " 2>/dev/null || true\n";
        REQUIRE(chmod(p.c_str(), 0755) == 0);
    }
    const std::string script = gputopo_test::source_dir() + "/etc/gputopo-healthcheck.sh";
    auto hc = [&](const std::string& expect) {
        unlink(calls.c_str());
        const std::string cmd = "PATH='" + d + "':/usr/bin:/bin SLURMD_NODENAME=n7 GPUTOPO='" + cli +
                                "' GPUTOPO_EXPECT='" + expect + "' ASAN_OPTIONS=detect_leaks=0 sh '" + script +
                                "' 2>'" + err + "'";
        const int st = std::system(cmd.c_str());
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    CHECK(hc("/etc/gputopo/expect/h1OO.xml") == 0);
    std::string log = slurp(calls);
    INFO(log);
    CHECK(log.find("scontrol") == std::string::npos);
    CHECK(log.find("logger -p daemon.err -t gputopo-healthcheck") != std::string::npos);
    CHECK(log.find("NOT CHECKED, node n7 not drained") != std::string::npos);
    CHECK(log.find("/etc/gputopo/expect/h1OO.xml") != std::string::npos);
    CHECK(slurp(err).find("NOT CHECKED, node n7 not drained") != std::string::npos);
    // A readable reference of 8 H200s: this machine (no such GPUs) fails the check and is drained.
    CHECK(hc(gputopo_test::topology(kH200)) == 0);
    log = slurp(calls);
    INFO(log);
    CHECK(log.find("scontrol update NodeName=n7 State=DRAIN Reason=gputopo doctor: FAIL") != std::string::npos);
    for (const char* f : {"scontrol", "logger", "calls", "err"}) unlink((d + "/" + f).c_str());
    rmdir(dir);
}
