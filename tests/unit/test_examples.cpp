// The shipped examples' own tests, run from the unit suite so they count:
// tests/examples/test_gputopo_bind.py (examples/ray/gputopo_bind.py, the
// helper a Ray actor uses to bind itself with `gputopo plan`).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"

TEST_CASE("examples/ray/gputopo_bind.py: binds a process to its GPUs' CPUs and NIC (python3 unittest)", "[examples]") {
    std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    if (std::system("command -v python3 >/dev/null 2>&1") != 0) {
        WARN("python3 is not installed: skipping tests/examples/test_gputopo_bind.py");
        return;
    }
    std::string src = gputopo_test::source_dir();
    std::string cmd = "GPUTOPO_CLI='" + cli + "' python3 '" + src + "/tests/examples/test_gputopo_bind.py' 2>&1";
    auto r = gputopo_test::run_cli("/bin/sh", {"-c", cmd});
    INFO(r.out);
    CHECK(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("OK"));
}
