#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/unit/fixtures.hpp"
#include "launcher/options/options.hpp"
#include "topo/core/errors.hpp"

using namespace gputopo::launch;

namespace {
Getenv env_of(std::map<std::string, std::string> m) {
    return [m](const std::string& k) -> std::optional<std::string> {
        auto it = m.find(k);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
}
Options parse(std::vector<const char*> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "gputopo-launch");
    return parse_options(static_cast<int>(args.size()), args.data(), env_of(env));
}
}  // namespace

TEST_CASE("launcher options: command line, program after -- or first word", "[launcher]") {
    Options o = parse({"--max-restarts", "5", "--checkpoint-cmd=save.sh x", "--", "python", "--lr", "1"});
    CHECK(o.max_restarts == 5);
    CHECK(o.checkpoint_cmd == "save.sh x");
    REQUIRE(o.command.size() == 3);
    CHECK(o.command[1] == "--lr");
    Options p = parse({"--dry-run", "train.py", "--max-restarts", "9"});
    CHECK(p.dry_run);
    CHECK(p.max_restarts == 3);  // belongs to the program
    REQUIRE(p.command.size() == 3);
    CHECK(p.command[0] == "train.py");
}

TEST_CASE("launcher options: config < environment < command line", "[launcher]") {
    std::string path = "/tmp/gputopo-launch-test-" + std::to_string(::getpid()) + ".conf";
    {
        std::ofstream f(path);
        f << "# comment\n\nmax-restarts = 7\ncheckpoint-every = 1h30m\nbackoff=10s\nlog = /tmp/x\n";
    }
    Options a = parse({"--config", path.c_str(), "--", "true"});
    CHECK(a.max_restarts == 7);
    CHECK(a.checkpoint_every_s == Approx(5400));
    CHECK(a.backoff_s == Approx(10));
    CHECK(a.config_path == path);
    Options b = parse({"--config", path.c_str(), "--", "true"}, {{"GPUTOPO_LAUNCH_MAX_RESTARTS", "2"}});
    CHECK(b.max_restarts == 2);
    CHECK(b.log_dir == "/tmp/x");
    Options c = parse({"--config", path.c_str(), "--max-restarts=1", "--", "true"}, {{"GPUTOPO_LAUNCH_MAX_RESTARTS", "2"}});
    CHECK(c.max_restarts == 1);
    Options d = parse({"--", "true"}, {{"GPUTOPO_LAUNCH_CONFIG", path}});
    CHECK(d.max_restarts == 7);
    std::remove(path.c_str());
}

TEST_CASE("launcher options: one clear message per bad input", "[launcher]") {
    auto msg = [](std::vector<const char*> a, std::map<std::string, std::string> e = {}) {
        try {
            parse(a, e);
        } catch (const gputopo::ParseError& x) {
            return std::string(x.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(msg({"--max-restarts", "x", "--", "t"}), Catch::Contains("--max-restarts 'x'") && Catch::Contains("non-negative integer"));
    CHECK_THAT(msg({"--frobnicate", "--", "t"}), Catch::Contains("unknown option '--frobnicate'"));
    CHECK_THAT(msg({"--frobnicate", "--", "t"}), Catch::Contains("gputopo-launch --help lists the options"));
    CHECK_THAT(msg({"--checkpiont-cmd", "x", "--", "t"}),
               Catch::Contains("unknown option '--checkpiont-cmd' (did you mean --checkpoint-cmd?)"));
    CHECK_THAT(msg({"--checkpoint-signal", "KILL", "--", "t"}), Catch::Contains("'KILL'") && !Catch::StartsWith("gputopo: "));
    CHECK_THAT(msg({"--checkpoint-every", "5 minutes", "--", "t"}), Catch::Contains("duration"));
    CHECK_THAT(msg({"--checkpoint-ranks", "1", "--", "t"}), Catch::Contains("0, node or all"));
    CHECK_THAT(msg({"--gpu-topo", "best", "--", "t"}), Catch::Contains("none, closest or island"));
    CHECK_THAT(msg({"--no-requeue-exit", "2,300", "--", "t"}), Catch::Contains("--no-requeue-exit '300'"));
    CHECK_THAT(msg({"--master-port-range", "30000-20000", "--", "t"}), Catch::Contains("LO <= HI"));
    CHECK_THAT(msg({"--log"}), Catch::Contains("--log needs a value"));
    CHECK_THAT(msg({"--", "t"}, {{"GPUTOPO_LAUNCH_REQUEUE", "maybe"}}), Catch::Contains("GPUTOPO_LAUNCH_REQUEUE 'maybe'"));
    Options o;
    CHECK_THROWS_WITH(apply_config_text(o, "max-restarts=1\nfoo=bar\n", "x.conf"), Catch::Contains("x.conf line 2: unknown key 'foo'"));
    CHECK_THROWS_WITH(apply_config_text(o, "max-restart=1\n", "x.conf"),
                      Catch::Contains("unknown key 'max-restart' (did you mean max-restarts?)"));
    CHECK_THROWS_WITH(apply_config_text(o, "max-restarts\n", "x.conf"), Catch::Contains("x.conf line 1") && Catch::Contains("key=value"));
}

TEST_CASE("launcher options: durations, signals, exit code lists", "[launcher]") {
    CHECK(parse_duration("90", "d") == Approx(90));
    CHECK(parse_duration("90s", "d") == Approx(90));
    CHECK(parse_duration("30m", "d") == Approx(1800));
    CHECK(parse_duration("2h", "d") == Approx(7200));
    CHECK(parse_duration("1d", "d") == Approx(86400));
    CHECK(parse_duration("1h30m", "d") == Approx(5400));
    CHECK(parse_duration("0.5s", "d") == Approx(0.5));
    CHECK_THROWS_AS(parse_duration("", "d"), gputopo::ParseError);
    CHECK_THROWS_AS(parse_duration("1h30", "d"), gputopo::ParseError);
    CHECK_THROWS_AS(parse_duration("10ms", "d"), gputopo::ParseError);
    CHECK_THROWS_AS(parse_duration("-5", "d"), gputopo::ParseError);
    CHECK(parse_signal("USR2", "s") == SIGUSR2);
    CHECK(parse_signal("sigusr1", "s") == SIGUSR1);
    CHECK(parse_signal("15", "s") == SIGTERM);
    CHECK_THROWS_AS(parse_signal("9", "s"), gputopo::ParseError);
    CHECK_THROWS_AS(parse_signal("USR3", "s"), gputopo::ParseError);
    CHECK(signal_name(SIGUSR2) == "SIGUSR2");
    CHECK(parse_int_list("2,64-66", "c") == std::vector<int>{2, 64, 65, 66});
    CHECK_THROWS_AS(parse_int_list("0", "c"), gputopo::ParseError);
    CHECK_THROWS_AS(parse_int_list("5-3", "c"), gputopo::ParseError);
}

TEST_CASE("launcher options: every key has one env name and appears in --help", "[launcher]") {
    std::string help = usage_text();
    for (const auto& k : option_keys()) CHECK(help.find("--" + k) != std::string::npos);
    Options o = parse({"--", "t"}, {{"GPUTOPO_LAUNCH_CHECKPOINT_RANKS", "node"}, {"GPUTOPO_LAUNCH_MTBF_PER_NODE", "100h"}});
    CHECK(o.checkpoint_ranks == HookRanks::Node);
    CHECK(o.mtbf_per_node_s == Approx(360000));
}

TEST_CASE("launcher options: the shipped example config is valid", "[launcher]") {
    std::ifstream in(gputopo_test::source_dir() + "/etc/gputopo-launch.conf");
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    Options o;
    REQUIRE_NOTHROW(apply_config_text(o, ss.str(), "etc/gputopo-launch.conf"));
    CHECK(o.max_restarts == 3);
    CHECK(o.checkpoint_signal == SIGUSR2);
    CHECK(o.mtbf_per_node_s == Approx(6000.0 * 3600));
    CHECK(o.no_requeue_exit == std::vector<int>{2});
}
