// End-to-end: the built `gputopo nccl-topo` and `gputopo doctor` (GPUTOPO_CLI,
// exported by tests/run_tests.sh), with the fake NVML library.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "json_parse.hpp"
#include "nvml_fake.hpp"
#include "topo/nccl_xml_source.hpp"

using gputopo_test::FakeNvmlScenario;
using gputopo_test::JsonParser;
using gputopo_test::JsonValue;

namespace {

struct Run {
    int rc = -1;
    std::string out, err;
};

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

Run run(const std::string& cli, std::vector<std::string> args) {
    char out_path[] = "/tmp/gputopo-g-out-XXXXXX";
    char err_path[] = "/tmp/gputopo-g-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    REQUIRE(out_fd >= 0);
    REQUIRE(err_fd >= 0);
    args.insert(args.begin(), cli);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        execv(cli.c_str(), argv.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(out_fd);
    close(err_fd);
    Run r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_all(out_path);
    r.err = read_all(err_path);
    unlink(out_path);
    unlink(err_path);
    return r;
}

std::string cli_or_skip() {
    const char* cli = std::getenv("GPUTOPO_CLI");
    if (!cli || !*cli) {
        WARN("GPUTOPO_CLI is not set: skipping the end-to-end CLI test (tests/run_tests.sh sets it)");
        return "";
    }
    REQUIRE(access(cli, X_OK) == 0);
    return cli;
}

const char* kH200 = "nccl/vastai-hgx-h200-8x_8xH200_4xNVSwitch_2xXeon8592+_nccl-dump.xml";

}  // namespace

TEST_CASE("gputopo nccl-topo writes a file NCCL's format reader takes back", "[nccltopo][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kH200);
    char dir[] = "/tmp/gputopo-g-nccl-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string file = std::string(dir) + "/nccl-topo.xml";
    Run r = run(cli, {"nccl-topo", "--topology", topo, "-o", file});
    INFO(r.err);
    REQUIRE(r.rc == 0);
    CHECK(r.out.empty());
    gputopo::Node n = gputopo::read_nccl_xml(file);
    CHECK(n.gpus.size() == 8);
    CHECK(n.links.size() == 28);
    Run s = run(cli, {"nccl-topo", "--topology", topo, "-o", "-"});
    CHECK(s.rc == 0);
    CHECK(s.out == read_all(file));
    unlink(file.c_str());
    rmdir(dir);

    Run bad = run(cli, {"nccl-topo", "--topology", topo});
    CHECK(bad.rc == 2);
    CHECK(bad.err == "gputopo: nccl-topo needs -o FILE (the NCCL topology file to write; '-' for standard output)\n");
    Run missing = run(cli, {"nccl-topo", "--topology", "/nonexistent.xml", "-o", "-"});
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
        Run r = run(cli, a);
        INFO(r.out << r.err);
        CHECK(r.rc == 0);
        CHECK(r.out.find("gputopo doctor: OK") != std::string::npos);
    }
    {
        FakeNvmlScenario sc("hgx-h200-links-down.nvml");
        std::vector<std::string> a = common;
        a.push_back("--format");
        a.push_back("json");
        Run r = run(cli, a);
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
    Run bad = run(cli, {"doctor", "--format", "yaml"});
    CHECK(bad.rc == 2);
    CHECK(bad.err.find("--format") != std::string::npos);
}
