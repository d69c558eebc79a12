// gputopo-launch's node read (issue 35): the built launcher itself, not a
// helper, reads its node the one way (step/node_read.hpp): the user's NVML
// library and timeout, the site's plugstack.conf (nvml=, nvml_timeout=,
// topology=) as the plugin reads it.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "tests/unit/cli_runner.hpp"
#include "tests/unit/fixtures.hpp"
#include "tests/unit/nvml_fake.hpp"
#include "topo/sources/nvml_source.hpp"

namespace {

std::string launcher_or_skip() {
    std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return "";
    std::string l = cli.substr(0, cli.rfind('/')) + "/gputopo-launch";
    REQUIRE(access(l.c_str(), X_OK) == 0);
    return l;
}

// A Slurm configuration directory of its own (SLURM_CONF), with `plugstack`
// as its plugstack.conf ("" = none), and the task variables of a step on n1;
// every variable set here is unset again at the end.
struct StepEnv {
    std::string dir;
    explicit StepEnv(const std::string& plugstack) {
        char t[] = "/tmp/gputopo-node-read-XXXXXX";
        REQUIRE(mkdtemp(t));
        dir = t;
        std::ofstream(dir + "/slurm.conf") << "ClusterName=test\n";
        if (!plugstack.empty()) std::ofstream(dir + "/plugstack.conf") << plugstack << "\n";
        set("SLURM_CONF", dir + "/slurm.conf");
        set("SLURM_JOB_ID", "7");
        set("SLURM_STEP_ID", "0");
        set("SLURM_PROCID", "0");
        set("SLURM_LOCALID", "0");
        set("SLURM_NODEID", "0");
        set("SLURMD_NODENAME", "n1");
        set("SLURM_STEP_GPUS", "0,1");
    }
    ~StepEnv() {
        for (const char* v : {"SLURM_CONF", "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID",
                              "SLURM_NODEID", "SLURMD_NODENAME", "SLURM_STEP_GPUS", gputopo::kNvmlLibraryEnv,
                              gputopo::kNvmlTimeoutEnv})
            unsetenv(v);
        unlink((dir + "/slurm.conf").c_str());
        unlink((dir + "/plugstack.conf").c_str());
        rmdir(dir.c_str());
    }
    static void set(const char* name, const std::string& v) { setenv(name, v.c_str(), 1); }
};

// Runs the launcher (`true` as the program); the seconds it took in `took`.
gputopo_test::CliResult launch(const std::string& launcher, const std::vector<std::string>& args, double& took) {
    const auto t0 = std::chrono::steady_clock::now();
    gputopo_test::CliResult r = gputopo_test::run_cli(launcher, args, true);
    took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace

TEST_CASE("gputopo-launch reads its node with GPUTOPO_NVML_LIBRARY and GPUTOPO_NVML_TIMEOUT, else the site's nvml= and nvml_timeout= (issue 35)", "[nvml][launcher]") {
    const std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    const std::string lib = gputopo_test::fake_nvml_library();
    REQUIRE(gputopo_test::file_exists(lib));
    gputopo_test::FakeNvmlScenario sc("init-hangs.nvml");
    double took = 0;
    SECTION("the user's variables") {
        StepEnv e("");
        StepEnv::set(gputopo::kNvmlLibraryEnv, lib);
        StepEnv::set(gputopo::kNvmlTimeoutEnv, "1");
        gputopo_test::CliResult r = launch(launcher, {"--gpu-topo=closest", "--", "true"}, took);
        INFO(r.out << r.err << "took " << took << " s");
        CHECK(r.rc == 0);
        CHECK(took >= 0.9);
        CHECK(took < 8);
        CHECK_THAT(r.err, Catch::Contains(lib + " did not answer within 1 s"));
    }
    SECTION("the site's plugstack.conf line") {
        StepEnv e("optional /usr/lib/slurm/gputopo.so nvml=" + lib + " nvml_timeout=1");
        gputopo_test::CliResult r = launch(launcher, {"--gpu-topo=closest", "--", "true"}, took);
        INFO(r.out << r.err << "took " << took << " s");
        CHECK(r.rc == 0);
        CHECK(took >= 0.9);
        CHECK(took < 8);
        CHECK_THAT(r.err, Catch::Contains(lib + " did not answer within 1 s"));
    }
}

TEST_CASE("gputopo-launch reads the topology file the site's plugstack.conf names for its node (issue 35)", "[launcher]") {
    const std::string launcher = launcher_or_skip();
    if (launcher.empty()) return;
    const std::string topo =
        gputopo_test::topology("hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml");
    StepEnv e("include " + std::string("/nonexistent/plugstack.conf.d/*.conf") +
              "\noptional /usr/lib/slurm/gputopo.so topology=" + topo + " default=closest");
    double took = 0;
    gputopo_test::CliResult r = launch(launcher, {"--gpu-topo=closest", "--dry-run", "--", "true"}, took);
    INFO(r.out << r.err);
    CHECK(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("binding: closest"));
    CHECK_THAT(r.out, Catch::Contains("CUDA_VISIBLE_DEVICES=0,1"));
    CHECK_THAT(r.out + r.err, !Catch::Contains("running unbound"));
    // A line the plugin would refuse is the launcher's one clear message, naming the file.
    std::ofstream(e.dir + "/plugstack.conf") << "optional /usr/lib/slurm/gputopo.so colour=blue\n";
    r = launch(launcher, {"--gpu-topo=closest", "--dry-run", "--", "true"}, took);
    INFO(r.out << r.err);
    CHECK_THAT(r.out + r.err, Catch::Contains(e.dir + "/plugstack.conf: unknown argument 'colour'"));
}
