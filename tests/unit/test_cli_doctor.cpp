// End-to-end: the built `gputopo nccl-topo` and `gputopo doctor` (GPUTOPO_CLI,
// exported by tests/run_tests.sh), with the fake NVML library.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

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
