// End-to-end: the messages and limits of the built `gputopo` (GPUTOPO_CLI, set
// by tests/run_tests.sh) a new user meets first (issue 36 item 6): each bad
// input is one line on stderr, exit 2, naming the input, what was expected
// and, for a near miss, the word meant.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"

using gputopo_test::CliResult;
using gputopo_test::cli_or_skip;
using gputopo_test::run_cli;

namespace {

const char* kOci = "nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml";

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Exit 2, one line on stderr holding every one of `parts`.
void usage_error(const CliResult& r, const std::vector<std::string>& parts) {
    INFO(r.err);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind("gputopo: ", 0) == 0);
    for (const auto& p : parts) CHECK_THAT(r.err, Catch::Contains(p));
}

}  // namespace

TEST_CASE("gputopo plan: --ntasks is capped at Slurm's most tasks per node; counts say their range", "[cli][messages]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string t = gputopo_test::topology(kOci);
    usage_error(run_cli(cli, {"plan", "--topology", t, "--ntasks", "1000000"}),
                {"bad value '1000000' for --ntasks", "from 1 to 65533, Slurm's most tasks per node"});
    usage_error(run_cli(cli, {"plan", "--topology", t, "--gpus-per-task", "1234567890"}),
                {"--gpus-per-task", "from 1 to 999999999"});
    usage_error(run_cli(cli, {"ranks", "--nodes", "n[1-2]", "--tasks-per-node", "70000"}),
                {"--tasks-per-node", "from 1 to 65533"});
    CliResult most = run_cli(cli, {"plan", "--topology", t, "--ntasks", "16", "--format", "json"});
    CHECK(most.rc == 0);
}

TEST_CASE("gputopo: did you mean, case and typos alike", "[cli][messages]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string t = gputopo_test::topology(kOci);
    usage_error(run_cli(cli, {"plan", "--topology", t, "--mode", "ISLAND"}),
                {"unknown value 'ISLAND' for --mode", "did you mean island?"});
    usage_error(run_cli(cli, {"labels", "--nodes", "n[1-2]", "--keys", "acelerator=nvidia.com/gpu.clique"}),
                {"--keys: 'acelerator=nvidia.com/gpu.clique'", "did you mean accelerator?"});
    char dir[] = "/tmp/gputopo-msg-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string conf = std::string(dir) + "/gputopo.conf";
    std::ofstream(conf) << "Isand=rack1 Nodes=n[1-2]\n";
    CliResult isand = run_cli(cli, {"ranks", "--nodes", "n[1-2]", "--islands", conf});
    INFO(isand.err);
    CHECK(isand.rc != 0);
    CHECK(lines(isand.err) == 1);
    CHECK_THAT(isand.err, Catch::Contains("unknown key 'Isand' (did you mean Island?)"));
    std::ofstream(conf) << "Island=rack1 Node=n[1-2]\n";
    CliResult node = run_cli(cli, {"ranks", "--nodes", "n[1-2]", "--islands", conf});
    CHECK_THAT(node.err, Catch::Contains("unknown key 'Node' (did you mean Nodes?)"));
    unlink(conf.c_str());
    rmdir(dir);
}

TEST_CASE("gputopo plan: --nic-include that names no NIC of the node is exit 2; one name among others a warning",
          "[cli][messages][nicpolicy]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    const std::string t = gputopo_test::topology(kOci);
    usage_error(run_cli(cli, {"plan", "--topology", t, "--nic-include", "mlx5_99"}),
                {"--nic-include 'mlx5_99' names no NIC of", "(it has mlx5_0, "});
    CliResult some = run_cli(cli, {"plan", "--topology", t, "--nic-include", "mlx5_0,mlx5_99", "--format", "json"});
    INFO(some.err);
    CHECK(some.rc == 0);
    CHECK_THAT(some.err, Catch::Contains("'mlx5_99', which is not on this node"));
    CHECK_THAT(some.out, Catch::Contains("mlx5_0"));
}

TEST_CASE("gputopo nccl-topo: a file that cannot be written is named as the user gave it", "[cli][messages][nccltopo]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    CliResult r = run_cli(cli, {"nccl-topo", "--topology", gputopo_test::topology(kOci), "-o", "/nonexistent/dir/topo.xml"});
    INFO(r.err);
    CHECK(r.rc == 1);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind("gputopo: cannot write /nonexistent/dir/topo.xml: No such file or directory", 0) == 0);
}

TEST_CASE("gputopo ranks --layout/--model: partial model refused, partial order completed with a note, sources named",
          "[cli][messages][layout]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    char dir[] = "/tmp/gputopo-msg-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string conf = std::string(dir) + "/gputopo.conf";
    std::ofstream(conf) << "Island=a Nodes=n[1-2]\nIsland=b Nodes=n[3-4]\n";
    const std::vector<std::string> base = {"ranks", "--nodes", "n[1-4]", "--tasks-per-node", "8", "--islands", conf,
                                           "--layout"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> a = base;
        a.insert(a.end(), more.begin(), more.end());
        return run_cli(cli, a);
    };
    usage_error(with({"tp=8,pp=2", "--model", "params=70B,layers=80"}),
                {"--model: bad model description 'params=70B,layers=80': missing hidden, seq, micro-batch, micro-batches"});
    CliResult order = with({"tp=8,pp=4,order=tp-dp-pp"});
    INFO(order.err << order.out);
    CHECK(order.rc == 0);
    CHECK(order.err == "gputopo: note: --layout order 'tp-dp-pp' completed to 'tp-dp-pp-cp-ep' "
                       "(the dimensions it leaves out have size 1)\n");
    CHECK(order.out.rfind("layout ", 0) == 0);
    const std::string first = order.out.substr(0, order.out.find('\n'));
    CHECK_THAT(first, Catch::Contains(" islands (from "));
    CliResult full = with({"tp=8,pp=4,order=tp-cp-ep-dp-pp"});
    CHECK(full.rc == 0);
    CHECK(full.err.empty());
    unlink(conf.c_str());
    rmdir(dir);
}
