// gputopo plan --cpus-per-task N shows what the plugin binds for srun -c N
// (issue 36 item 7): the built CLI (GPUTOPO_CLI) against the step binding the
// plugin runs (step/step_binding.hpp) with SLURM_CPUS_PER_TASK=N, on the same
// topology, task by task: CPUs, memory nodes and the OpenMP variables.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>

#include "step/option_parser.hpp"
#include "step/step_binding.hpp"
#include "tests/unit/cli_runner.hpp"
#include "tests/unit/env_map.hpp"
#include "tests/unit/fixtures.hpp"
#include "tests/unit/json_parse.hpp"
#include "topo/output/plan_format.hpp"
#include "topo/sources/topology_loader.hpp"

using gputopo_test::JsonParser;
using gputopo_test::JsonValue;

namespace {

const char* kXe8640 = "hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml";

// "task 2: OMP_PLACES=..." lines of `plan --env` for one task, as NAME -> value.
std::map<std::string, std::string> env_lines(const std::string& out, int task) {
    std::map<std::string, std::string> m;
    std::istringstream in(out);
    const std::string prefix = "task " + std::to_string(task) + ": ";
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(prefix, 0) != 0) continue;
        const std::string kv = line.substr(prefix.size());
        const size_t eq = kv.find('=');
        if (eq != std::string::npos) m[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return m;
}

}  // namespace

TEST_CASE("gputopo plan --cpus-per-task N: the CPUs, memory and OpenMP places the plugin gives srun -c N",
          "[cli][planner]") {
    const std::string cli = gputopo_test::cli_or_skip();
    if (cli.empty()) return;
    const std::string topo = gputopo_test::topology(kXe8640);
    const gputopo::Node node = gputopo::load_topology_file(topo);
    for (int c : {1, 4, 20}) {
        INFO("-c " << c);
        gputopo::step::StepSetup setup;
        setup.env = gputopo_test::env_of({{"SLURM_STEP_GPUS", "0,1,2,3"}, {"SLURM_CPUS_PER_TASK", std::to_string(c)}});
        setup.local_tasks = 4;
        setup.node_name = "n1";
        setup.options = gputopo::step::parse_gpu_topo("closest");
        setup.host_cpus = node.cpus;  // as on the node itself
        setup.affinity = node.cpus;
        const gputopo::step::StepBinding plugin(setup, node);

        auto json = gputopo_test::run_cli(cli, {"plan", "--topology", topo, "--cpus-per-task", std::to_string(c),
                                                "--format", "json"});
        INFO(json.err);
        REQUIRE(json.rc == 0);
        const JsonValue plan = JsonParser::parse(json.out);
        auto env = gputopo_test::run_cli(cli, {"plan", "--topology", topo, "--cpus-per-task", std::to_string(c), "--env"});
        REQUIRE(env.rc == 0);
        REQUIRE(plan["tasks"].arr.size() == 4);
        for (int t = 0; t < 4; ++t) {
            INFO("task " << t);
            const gputopo::step::TaskAction a = plugin.task(t, gputopo_test::env_of({}));
            CHECK(a.cpus.count() == c);
            CHECK(plan["tasks"][static_cast<size_t>(t)]["cpus"].str == a.cpus.to_list());
            CHECK(plan["tasks"][static_cast<size_t>(t)]["mems"].str == gputopo::index_list(a.mems));
            const auto shown = env_lines(env.out, t);
            for (const auto& v : a.wanted) {
                if (v.name.rfind("OMP_", 0) != 0) continue;
                INFO(v.name);
                REQUIRE(shown.count(v.name) == 1);
                CHECK(shown.at(v.name) == v.value);
            }
            CHECK(shown.count("OMP_PLACES") == 1);
        }
    }
    auto bad = gputopo_test::run_cli(cli, {"plan", "--topology", topo, "--cpus-per-task", "0"});
    CHECK(bad.rc == 2);
    CHECK_THAT(bad.err, Catch::Contains("--cpus-per-task"));
}
