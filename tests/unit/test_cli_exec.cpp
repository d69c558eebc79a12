// End-to-end tests of the built `gputopo` binary. tests/run_tests.sh exports
// GPUTOPO_CLI (the binary of the build under test); when it is set the binary
// must exist. Only a bare `unit-tests` run without it skips these cases.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/unit/fixtures.hpp"
#include "tests/unit/cli_runner.hpp"
#include "tests/unit/json_parse.hpp"

using gputopo_test::JsonParser;
using gputopo_test::JsonValue;
using gputopo_test::cli_or_skip;
using gputopo_test::run_cli;
using gputopo_test::slurp;

namespace {

int count_lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

const char* kH200 = "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";

}  // namespace

TEST_CASE("gputopo plan --format json on a fixture: every GPU once, the documented fields", "[cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kH200);
    gputopo_test::CliResult r = run_cli(cli, {"plan", "--topology", topo, "--gpus", "0-7", "--ntasks", "4", "--mode", "island",
                             "--format", "json"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(r.err.empty());
    JsonValue v = JsonParser::parse(r.out);
    CHECK(v["mode"].str == "island");
    REQUIRE(v["tasks"].arr.size() == 4);
    // The GPUs' bus ids as written in the fixture file, in PCI order.
    const std::vector<std::string> pci = {"0000:83:00.0", "0000:8b:00.0", "0000:93:00.0", "0000:9b:00.0",
                                          "0000:a3:00.0", "0000:ab:00.0", "0000:b3:00.0", "0000:bb:00.0"};
    std::multiset<int> used;
    for (size_t t = 0; t < 4; ++t) {
        const JsonValue& task = v["tasks"][t];
        for (const char* k : {"task", "gpus", "gpu_pci", "cpus", "mems", "nics", "island"}) CHECK(task.has(k));
        CHECK(task["task"].num == static_cast<double>(t));
        auto gpus = task["gpus"].ints();
        auto bus = task["gpu_pci"].strings();
        REQUIRE(gpus.size() == 2);
        REQUIRE(bus.size() == 2);
        for (size_t k = 0; k < gpus.size(); ++k) {
            REQUIRE(gpus[k] >= 0);
            REQUIRE(gpus[k] < 8);
            CHECK(bus[k] == pci[static_cast<size_t>(gpus[k])]);
            used.insert(gpus[k]);
        }
        CHECK_FALSE(task["cpus"].str.empty());
    }
    CHECK(used == std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("gputopo plan table: one line per task", "[cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    gputopo_test::CliResult r = run_cli(cli, {"plan", "--topology", gputopo_test::topology(kH200), "--gpus", "0,2,5", "--ntasks", "3"});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(r.out.rfind("mode: closest", 0) == 0);
    CHECK(count_lines(r.out) >= 5);  // header, column titles, 3 tasks (+ notes)
    CHECK(r.out.find("\n0 ") != std::string::npos);
    CHECK(r.out.find("\n2 ") != std::string::npos);
    CHECK(r.out.find("\n3 ") == std::string::npos);
}

TEST_CASE("gputopo show on a fixture: table and JSON", "[cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kH200);
    gputopo_test::CliResult t = run_cli(cli, {"show", "--topology", topo});
    INFO(t.err);
    REQUIRE(t.rc == 0);
    CHECK(t.out.find("\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\t") != std::string::npos);
    CHECK(t.out.find("\nGPU7\t") != std::string::npos);
    CHECK(t.out.find("Legend:") != std::string::npos);
    gputopo_test::CliResult j = run_cli(cli, {"show", "--topology", topo, "--format", "json"});
    REQUIRE(j.rc == 0);
    JsonValue v = JsonParser::parse(j.out);
    CHECK(v["gpus"].arr.size() == 8);         // 8 <gpu> elements in the file
    CHECK(v["numa_nodes"].arr.size() == 2);   // two <cpu numaid=...> elements
    CHECK(v["gpu_gpu"].arr.size() == 8);
    CHECK(v["gpus"][0]["pci"].str == "0000:83:00.0");
}

TEST_CASE("gputopo show without --topology describes this machine (no GPUs is not an error)", "[cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    gputopo_test::CliResult r = run_cli(cli, {"show"}, true);
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK((r.out.find("No GPUs found") != std::string::npos || r.out.find("\tGPU0") != std::string::npos));
    CHECK(r.out.find("CPUs: ") != std::string::npos);
}

TEST_CASE("gputopo help, --help and --version", "[cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    for (auto args : {std::vector<std::string>{"--help"}, {"help"}}) {
        gputopo_test::CliResult r = run_cli(cli, args);
        CHECK(r.rc == 0);
        CHECK(r.out.find("show") != std::string::npos);
        CHECK(r.out.find("plan") != std::string::npos);
    }
    gputopo_test::CliResult p = run_cli(cli, {"plan", "--help"});
    CHECK(p.rc == 0);
    for (const char* opt : {"--topology", "--gpus", "--ntasks", "--gpus-per-task", "--cpus", "--mode", "--format"})
        CHECK(p.out.find(opt) != std::string::npos);
    CHECK(run_cli(cli, {"help", "show"}).out.find("--format") != std::string::npos);
    gputopo_test::CliResult v = run_cli(cli, {"--version"});
    CHECK(v.rc == 0);
    CHECK(v.out.rfind("gputopo ", 0) == 0);
    gputopo_test::CliResult none = run_cli(cli, {});
    CHECK(none.rc == 2);
    CHECK(none.err.find("usage:") != std::string::npos);
}

TEST_CASE("gputopo bad command lines: one message naming the bad word and the choices, exit 2", "[cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kH200);
    struct Case {
        std::vector<std::string> args;
        std::vector<std::string> in_message;
    };
    const std::vector<Case> cases = {
        {{"frobnicate"}, {"'frobnicate'", "show", "plan"}},
        {{"--frob"}, {"'--frob'"}},
        {{"plan", "--topology", topo, "--bogus"}, {"'--bogus'", "'plan'", "gputopo plan --help"}},
        {{"plan", "--topology", topo, "--gpu", "0"}, {"'--gpu'", "'plan'", "did you mean --gpus?"}},
        {{"show", "--gpus", "0"}, {"'--gpus'", "'show'", "gputopo show --help"}},
        {{"shwo"}, {"'shwo'", "did you mean show?"}},
        {{"plan", "--topology", topo, "--gpus", "0-x"}, {"'0-x'", "--gpus", "GPU indices"}},
        {{"plan", "--topology", topo, "--gpus", "3-1"}, {"'3-1'", "--gpus"}},
        {{"plan", "--topology", topo, "--gpus", "1,1"}, {"GPU 1", "twice"}},
        {{"plan", "--topology", topo, "--gpus", "0,8"}, {"GPU 8", "0-7"}},
        {{"plan", "--topology", topo, "--mode", "fastest"}, {"'fastest'", "--mode", "none, closest or island"}},
        {{"plan", "--topology", topo, "--format", "yaml"}, {"'yaml'", "table, json, svg or dot"}},
        {{"plan", "--topology", topo, "--mode", "closet"}, {"'closet'", "--mode", "did you mean closest?"}},
        {{"plan", "--topology", topo, "--format", "jsn"}, {"'jsn'", "did you mean json?", "table, json, svg or dot"}},
        {{"plan", "--topology", topo, "--ntasks", "0"}, {"'0'", "--ntasks"}},
        {{"plan", "--topology", topo, "--ntasks", "two"}, {"'two'", "--ntasks"}},
        {{"plan", "--topology", topo, "--cpus", "4-2"}, {"'4-2'", "--cpus"}},
        {{"plan", "--topology"}, {"'--topology'", "needs a value"}},
        {{"plan", "extra"}, {"'extra'"}},
        {{"help", "nope"}, {"'nope'"}},
    };
    for (const auto& c : cases) {
        std::string cmd;
        for (const auto& a : c.args) cmd += a + " ";
        INFO("gputopo " << cmd);
        gputopo_test::CliResult r = run_cli(cli, c.args);
        INFO("stderr: " << r.err);
        CHECK(r.rc == 2);
        CHECK(r.out.empty());
        CHECK(r.err.rfind("gputopo: ", 0) == 0);
        CHECK(r.err.find("gputopo: gputopo:") == std::string::npos);
        CHECK(count_lines(r.err) == 1);
        for (const auto& word : c.in_message) CHECK(r.err.find(word) != std::string::npos);
    }
}

TEST_CASE("gputopo unusable topology files: one message naming the file, exit 1", "[cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    char dir_template[] = "/tmp/gputopo-cli-XXXXXX";
    REQUIRE(mkdtemp(dir_template) != nullptr);
    const std::string dir = dir_template;
    const std::string missing = dir + "/no-such-topology.xml";
    const std::string not_xml = dir + "/not-xml.xml";
    std::ofstream(not_xml) << "this is not XML\n";
    // An hwloc XML without complete_cpuset: libhwloc 2.9 crashes on it (exit 139) unless refused first.
    const std::string crash = dir + "/no-complete-cpuset.xml";
    {
        std::string xml = slurp(gputopo_test::topology("hwloc/hp-sl390s-g7_2xXeon-Westmere_3xTeslaM2070_ConnectX2-IB_hwloc2.xml"));
        size_t at = xml.find(" complete_cpuset=\"");
        REQUIRE(at != std::string::npos);
        xml.erase(at, xml.find('"', xml.find('"', at) + 1) + 1 - at);
        std::ofstream(crash) << xml;
    }
    for (const std::string& file : {missing, not_xml, crash}) {
        for (const char* cmd : {"show", "plan"}) {
            INFO(cmd << " " << file);
            gputopo_test::CliResult r = run_cli(cli, {cmd, "--topology", file});
            INFO("stderr: " << r.err);
            CHECK(r.rc == 1);
            CHECK(r.out.empty());
            CHECK(r.err.rfind("gputopo: ", 0) == 0);
            CHECK(r.err.find("gputopo: gputopo:") == std::string::npos);
            CHECK(count_lines(r.err) == 1);
            CHECK(r.err.find(file) != std::string::npos);
        }
    }
    unlink(not_xml.c_str());
    unlink(crash.c_str());
    rmdir(dir.c_str());
}
