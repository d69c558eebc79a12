// gputopo run: slow nodes (run/slow_nodes.hpp). Heartbeat files as the
// Python helper writes them ("STEP TIME STATE WHERE BUSY"), read back through
// read_beat and the BeatTracker as the supervisor does, on a clock of the test's.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "launcher/failure/events.hpp"
#include "run/heartbeat.hpp"
#include "run/job_options.hpp"
#include "run/slow_nodes.hpp"

using namespace gputopo::launch;
using namespace gputopo::launch::job;

namespace {

std::string temp_dir() {
    char tmpl[] = "/tmp/gputopo-slow.XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    return tmpl;
}

void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Four ranks, two per node (n1: 0,1; n2: 2,3; n3: 4,5), in data-parallel lockstep:
// every rank reaches the same step (the collective waits for the slowest); a
// rank's busy seconds per step are its node's `busy_per_step`.
struct Job {
    std::string dir = temp_dir();
    std::vector<std::string> slots = {"n1", "n2", "n3"};
    int tpn = 2;
    BeatTracker tracker{6, 0};
    long long step = 0;
    std::vector<double> busy = std::vector<double>(6, 0);
    double now = 0;
    bool with_busy = true;

    std::string file(int r) const { return dir + "/hb." + std::to_string(r); }
    // `seconds` of training at one step per `step_s`; node i's ranks busy `per_step[i]` of each step.
    void train(double seconds, double step_s, const std::vector<double>& per_step) {
        for (double t = 0; t < seconds; t += 1) {  // the supervisor reads once a second
            now += 1;
            step += (long long)(1 / step_s);
            for (int r = 0; r < 6; ++r) {
                busy[size_t(r)] += per_step[size_t(r / tpn)] * (1 / step_s);
                char line[128];
                if (with_busy)
                    std::snprintf(line, sizeof line, "%lld %.3f c module.py:1 %.6f\n", step, now, busy[size_t(r)]);
                else
                    std::snprintf(line, sizeof line, "%lld %.3f c module.py:1\n", step, now);
                write(file(r), line);
                tracker.update(r, read_beat(file(r)), now);
            }
        }
    }
};

SlowPolicy policy(SlowAction a, double fraction, int windows, double window_s) {
    SlowPolicy p;
    p.action = a;
    p.fraction = fraction;
    p.windows = windows;
    p.window_s = window_s;
    return p;
}

// Feeds `seconds` of training to `s`, a window check every second; the windows judged.
std::vector<SlowWindow> run(Job& j, SlowNodes& s, double seconds, const std::vector<double>& per_step) {
    std::vector<SlowWindow> out;
    for (double t = 0; t < seconds; t += 1) {
        j.train(1, 0.1, per_step);
        if (auto w = s.observe(j.tracker.ranks(), j.now)) out.push_back(*w);
    }
    return out;
}

}  // namespace

TEST_CASE("gputopo run: heartbeat files carry the rank's busy seconds", "[job][slow]") {
    CHECK(parse_beat("57 1765000000.5 c module.py:12 3.25\n", 1).busy == 3.25);
    CHECK(parse_beat("57 1765000000.5 c module.py:12\n", 1).busy == -1);   // the helper without busy()
    CHECK(parse_beat("57 1765000000.5 c module.py:12 x\n", 1).busy == -1);
    CHECK(parse_beat("57 1765000000.5 c module.py:12 -1\n", 1).busy == -1);
    CHECK(parse_beat("57 1765000000.5 c module.py:12 1e12\n", 1).busy == -1);  // past 10^9 s
    CHECK(parse_beat("57 1765000000.5 c module.py:12 2.5x\n", 1).busy == -1);
    CHECK(parse_beat("57 1765000000.5 c module.py:12 3.25\n", 1).where == "module.py:12");
}

TEST_CASE("gputopo run: a node slow for N windows is flagged, named with the rates", "[job][slow]") {
    Job j;
    SlowNodes s(policy(SlowAction::Report, 0.5, 3, 5), j.slots, j.tpn);
    // Healthy: 0.02 s of own work per step everywhere.
    auto ws = run(j, s, 20, {0.02, 0.02, 0.02});
    REQUIRE(ws.size() >= 3);
    CHECK(ws.back().basis == "busy");
    CHECK(ws.back().slow.empty());
    CHECK(s.flagged().empty());
    // n2 throttled: its ranks take 0.08 s of own work per step (the others wait in the collective,
    // so every rank still reaches the same step).
    ws = run(j, s, 11, {0.02, 0.08, 0.02});
    CHECK(s.flagged().empty());  // two windows: not yet
    ws = run(j, s, 5, {0.02, 0.08, 0.02});
    REQUIRE(ws.size() == 1);
    CHECK(ws[0].slow == std::vector<std::string>{"n2"});
    CHECK(ws[0].flagged_now == std::vector<std::string>{"n2"});
    CHECK(s.flagged() == std::vector<std::string>{"n2"});
    CHECK(ws[0].rates_text() == "n2=12.5,n1=50,n3=50");  // the slow first
    CHECK(ws[0].rates_text(2) == "n2=12.5,n1=50,... (3 nodes)");
    CHECK(ws[0].median == Approx(50));
    // It recovers: after N good windows it is no longer flagged.
    ws = run(j, s, 15, {0.02, 0.02, 0.02});
    REQUIRE(!ws.empty());
    CHECK(ws.back().recovered_now == std::vector<std::string>{"n2"});
    CHECK(s.flagged().empty());
}

TEST_CASE("gputopo run: a node slow only briefly is not flagged", "[job][slow]") {
    // The first reading opens a window (now = 1); windows end at 6, 11, 16, ...
    Job j;
    SlowNodes s(policy(SlowAction::Report, 0.5, 3, 5), j.slots, j.tpn);
    // Slow for two windows, then well for one, three times over.
    for (int i = 0; i < 3; ++i) {
        auto ws = run(j, s, i == 0 ? 11 : 10, {0.02, 0.02, 0.1});
        REQUIRE(ws.size() == 2);
        for (const auto& w : ws) CHECK(w.slow == std::vector<std::string>{"n3"});
        ws = run(j, s, 5, {0.02, 0.02, 0.02});
        REQUIRE(ws.size() == 1);
        CHECK(ws[0].slow.empty());
    }
    CHECK(s.flagged().empty());
    // Slower than the median but not below the fraction: not slow.
    auto ws = run(j, s, 30, {0.02, 0.02, 0.035});
    for (const auto& w : ws) CHECK(w.slow.empty());
    CHECK(s.flagged().empty());
}

TEST_CASE("gputopo run: in lockstep the step rate alone names no node; busy seconds do", "[job][slow]") {
    Job j;
    j.with_busy = false;  // a program without busy(): steps per second, equal on every node
    SlowNodes s(policy(SlowAction::Report, 0.5, 2, 5), j.slots, j.tpn);
    auto ws = run(j, s, 30, {0.02, 0.09, 0.02});
    REQUIRE(!ws.empty());
    for (const auto& w : ws) {
        CHECK(w.basis == "wall");
        CHECK(w.slow.empty());
    }
    CHECK(s.flagged().empty());
}

TEST_CASE("gputopo run: a window in which a rank made no progress judges no one and breaks no streak", "[job][slow]") {
    Job j;
    SlowNodes s(policy(SlowAction::Report, 0.5, 3, 5), j.slots, j.tpn);
    auto ws = run(j, s, 11, {0.1, 0.02, 0.02});  // windows ending at 6 and 11: n1 slow twice
    REQUIRE(ws.size() == 2);
    CHECK(s.flagged().empty());
    // A checkpoint: nobody advances for 7 s (the window ending at 16 sees no progress).
    for (int t = 0; t < 7; ++t) {
        j.now += 1;
        for (int r = 0; r < 6; ++r) j.tracker.update(r, read_beat(j.file(r)), j.now);
        CHECK_FALSE(s.observe(j.tracker.ranks(), j.now));
    }
    CHECK(s.flagged().empty());
    ws = run(j, s, 3, {0.1, 0.02, 0.02});  // the window ending at 21: the third slow one
    REQUIRE(ws.size() == 1);
    CHECK(ws[0].flagged_now == std::vector<std::string>{"n1"});
}

TEST_CASE("gputopo run: a flagged node is replaced at the next reported checkpoint, with a spare", "[job][slow]") {
    Job j;
    const std::string report = j.dir + "/checkpoint";
    write(report, j.dir + "/ckpt/step-10.pt\n");
    EventLog log;
    std::string err;
    REQUIRE(log.open(j.dir + "/log", EventContext{"7", "job", 0, -1, "n1"}, err));
    SlowWatch w(policy(SlowAction::Replace, 0.5, 2, 5), j.slots, j.tpn, report, log);
    auto feed = [&](double seconds, std::vector<double> per_step, size_t spares) {
        std::optional<HangVerdict> v;
        for (double t = 0; t < seconds && !v; t += 1) {
            j.train(1, 0.1, per_step);
            v = w.check(j.tracker.ranks(), j.now, spares);
        }
        return v;
    };
    CHECK_FALSE(feed(5, {0.02, 0.02, 0.02}, 1));
    CHECK_FALSE(feed(12, {0.02, 0.1, 0.02}, 1));  // flagged; no checkpoint since
    const std::string events = slurp(log.path());
    CHECK_THAT(events, Catch::Contains("\"event\": \"slow_node\"") && Catch::Contains("\"node\": \"n2\"") &&
                           Catch::Contains("n2=10") && Catch::Contains("next reported checkpoint"));
    CHECK_FALSE(feed(3, {0.02, 0.1, 0.02}, 1));
    ::usleep(20000);
    write(report, j.dir + "/ckpt/step-20.pt\n");  // the program reports its next checkpoint
    auto v = feed(1, {0.02, 0.1, 0.02}, 1);
    REQUIRE(v);
    CHECK(v->slow);
    CHECK(v->node == "n2");
    CHECK(v->rank == 2);
    CHECK_THAT(v->evidence, Catch::Contains("step-20.pt"));
    CHECK_THAT(slurp(log.path()), Catch::Contains("\"event\": \"slow_node_replace\""));
}

TEST_CASE("gputopo run: a slow node is only reported without --slow-nodes=replace or without a spare", "[job][slow]") {
    for (auto [action, spares] : {std::pair{SlowAction::Report, size_t(1)}, std::pair{SlowAction::Replace, size_t(0)}}) {
        Job j;
        const std::string report = j.dir + "/checkpoint";
        EventLog log;
        std::string err;
        REQUIRE(log.open(j.dir + "/log", EventContext{"7", "job", 0, -1, "n1"}, err));
        SlowWatch w(policy(action, 0.5, 2, 5), j.slots, j.tpn, report, log);
        std::optional<HangVerdict> v;
        for (int t = 0; t < 40 && !v; ++t) {
            j.train(1, 0.1, {0.1, 0.02, 0.02});
            if (t == 20) write(report, "/ckpt/step-20.pt\n");
            if (t == 30) write(report, "/ckpt/step-30.pt\n");
            v = w.check(j.tracker.ranks(), j.now, spares);
        }
        CHECK_FALSE(v);
        CHECK_THAT(slurp(log.path()), Catch::Contains("\"node\": \"n1\"") &&
                                          Catch::Contains(spares ? "--slow-nodes=report" : "no spare left"));
    }
}

TEST_CASE("gputopo run: the slow-node options", "[job][slow]") {
    auto o = parse_job_options({"--slow-nodes", "replace", "--slow-fraction=0.6", "--slow-windows", "4", "--slow-window", "2m",
                                "--", "python3", "t.py"});
    CHECK(o.slow.action == SlowAction::Replace);
    CHECK(o.slow.fraction == 0.6);
    CHECK(o.slow.windows == 4);
    CHECK(o.slow.window_s == 120);
    o = parse_job_options({"--", "x"});
    CHECK(o.slow.action == SlowAction::Report);
    CHECK(o.slow.fraction == 0.5);
    CHECK(o.slow.windows == 3);
    CHECK(o.slow.window_s == 60);
    CHECK_THROWS_WITH(parse_job_options({"--slow-nodes", "yes", "--", "x"}),
                      Catch::Contains("--slow-nodes 'yes': expected off, report or replace"));
    CHECK_THROWS_WITH(parse_job_options({"--slow-fraction", "1.5", "--", "x"}),
                      Catch::Contains("--slow-fraction '1.5': expected a fraction between 0 and 1"));
    CHECK_THROWS_WITH(parse_job_options({"--slow-windows", "0", "--", "x"}), Catch::Contains("--slow-windows '0'"));
}
