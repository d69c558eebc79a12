// gputopo run: whose fault a step's end was (run/step_end.hpp), what the
// ranks printed (rank_output.hpp), which rank hung (heartbeat.hpp), and the
// files of the state directory (run_files.hpp). Lines as srun 22.05 and torch
// 1.13 (gloo) print them.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "launcher/failure/classify.hpp"
#include "launcher/failure/events.hpp"
#include "run/heartbeat.hpp"
#include "run/job_options.hpp"
#include "run/rank_output.hpp"
#include "run/run_files.hpp"
#include "run/step_end.hpp"

using namespace gputopo::launch;
using namespace gputopo::launch::job;

namespace {

const char* kZeroDivision =
    "Traceback (most recent call last):\n"
    "  File \"/work/train.py\", line 57, in <module>\n"
    "    loss = loss / (step - 50)\n"
    "ZeroDivisionError: division by zero\n";
const char* kPeerLost =
    "Traceback (most recent call last):\n"
    "  File \"/work/train.py\", line 60, in <module>\n"
    "    loss.backward()\n"
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:37123\n";

StepEndFacts facts(const std::string& srun_lines, std::map<int, std::string> tails) {
    StepEndFacts f;
    f.events = srun_events(srun_lines);
    f.rank_tails = std::move(tails);
    f.slots = {"r1", "r2", "r3"};
    f.tasks_per_node = 2;
    f.srun_status = 1;
    return f;
}

}  // namespace

TEST_CASE("gputopo run: srun's lines are read whole, numbers past int are not a crash", "[job][root]") {
    auto ev = srun_events("srun: error: n3: task 1: Killed\nsrun: launch/slurm: _step_signal: Terminating StepId=5.0\n"
                          "srun: error: n1: tasks 0,2-3: Exited with exit code 1\n"
                          "srun: error: Node failure on n4\n");
    REQUIRE(ev.size() == 3);
    CHECK((ev[0].node == "n3" && ev[0].rank == 1 && !ev[0].exited && ev[0].term_signal == 9));
    REQUIRE(ev[1].ranks.size() == 2);
    CHECK((ev[1].rank == 0 && ev[1].ranks[1] == std::make_pair(2, 3) && ev[1].exit_code == 1));
    CHECK((ev[2].node == "n4" && ev[2].node_lost && ev[2].rank == -1));
    // A rank's stderr can print anything shaped like srun's lines: out of range, it is not an event.
    CHECK(srun_events("srun: error: n1: task 0: Exited with exit code 99999999999\n").empty());
    CHECK(srun_events("srun: error: n1: task 99999999999: Killed\n").empty());
    CHECK(srun_events("srun: error: n1: task 0: Exited with exit code 300\n").empty());
    CHECK(srun_events("srun: error: n1: tasks 5-2: Killed\n").empty());
    CHECK(srun_events(std::string(100000, 'x')).empty());
}

TEST_CASE("gputopo run: a user bug on one rank is a user error, whatever srun prints first", "[job][root]") {
    // Rank 2 (r2) dies of its peer, and srun happens to report it first; rank 3 (r2) raised.
    StepEndFacts f = facts("srun: error: r2: task 2: Exited with exit code 1\n"
                           "srun: error: r2: task 3: Exited with exit code 1\n"
                           "srun: error: r1: tasks 0-1: Killed\nsrun: error: r3: tasks 4-5: Killed\n",
                           {{2, kPeerLost}, {3, kZeroDivision}});
    StepVerdict v = root_cause(f, ClassifyPolicy{});
    CHECK(v.cls.cls == FailureClass::UserError);
    CHECK(v.rank == 3);
    CHECK(v.node == "r2");
    CHECK(v.exception == "ZeroDivisionError: division by zero");
    CHECK_THAT(v.cls.evidence, Catch::Contains("rank 3 on r2: ZeroDivisionError: division by zero"));
    CHECK(v.status == 1);
    // Without the buggy rank's output, srun's order decides among ranks failing on their own.
    f.rank_tails.clear();
    CHECK(root_cause(f, ClassifyPolicy{}).rank == 2);
}

TEST_CASE("gputopo run: a lost node is blamed, not the peers that died of it", "[job][root]") {
    // The peers' exits come first; srun names the failed node last.
    StepEndFacts f = facts("srun: error: r1: tasks 0-1: Exited with exit code 1\n"
                           "srun: error: r3: tasks 4-5: Exited with exit code 1\n"
                           "srun: error: Node failure on r2\n",
                           {{0, kPeerLost}, {1, kPeerLost}, {4, kPeerLost}, {5, kPeerLost}});
    StepVerdict v = root_cause(f, ClassifyPolicy{});
    CHECK(v.cls.cls == FailureClass::NodeFault);
    CHECK(v.node == "r2");
    // No node line yet (srun killed at --kill-timeout): the node whose ranks never ended.
    f = facts("srun: error: r1: tasks 0-1: Exited with exit code 1\nsrun: error: r3: tasks 4-5: Exited with exit code 1\n",
              {{0, kPeerLost}, {1, kPeerLost}, {4, kPeerLost}, {5, kPeerLost}});
    v = root_cause(f, ClassifyPolicy{});
    CHECK(v.cls.cls == FailureClass::NodeFault);
    CHECK(v.node == "r2");
    CHECK_THAT(v.cls.evidence, Catch::Contains("no end reported for the ranks of r2"));
    // srun's own teardown (SIGTERM after "Terminating StepId") is not a cause either: as seen on
    // 22.05 when a node died with its slurmstepd, its ranks never reported.
    f = facts("srun: error: r3: task 5: Exited with exit code 1\nsrun: launch/slurm: _step_signal: Terminating StepId=1.1\n"
              "srun: error: r3: task 4: Terminated\nsrun: error: r1: tasks 0-1: Terminated\n",
              {{5, kPeerLost}});
    v = root_cause(f, ClassifyPolicy{});
    CHECK((v.cls.cls == FailureClass::NodeFault && v.node == "r2"));
    // Slurm's node state names it.
    f.slurm_lost = {"r3"};
    CHECK(root_cause(f, ClassifyPolicy{}).node == "r3");
    // Peers only, every node reported: nobody to blame.
    f = facts("srun: error: r1: tasks 0-1: Exited with exit code 1\nsrun: error: r2: tasks 2-3: Exited with exit code 1\n"
              "srun: error: r3: tasks 4-5: Exited with exit code 1\n",
              {{0, kPeerLost}, {1, kPeerLost}, {2, kPeerLost}, {3, kPeerLost}, {4, kPeerLost}, {5, kPeerLost}});
    v = root_cause(f, ClassifyPolicy{});
    CHECK(v.cls.cls == FailureClass::PeerLost);
    CHECK(v.node.empty());
}

TEST_CASE("gputopo run: a killed rank, a GPU fault, the reserved code", "[job][root]") {
    StepEndFacts f = facts("srun: error: r3: task 4: Killed\nsrun: error: r1: tasks 0-1: Killed\n", {});
    StepVerdict v = root_cause(f, ClassifyPolicy{});
    CHECK((v.cls.cls == FailureClass::Failed && v.node == "r3" && v.rank == 4 && v.cls.local));
    f = facts("srun: error: r1: task 0: Exited with exit code 1\nsrun: error: r2: task 2: Exited with exit code 1\n",
              {{0, kPeerLost}, {2, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"}});
    v = root_cause(f, ClassifyPolicy{});
    CHECK((v.cls.cls == FailureClass::GpuFault && v.node == "r2"));
    f = facts("srun: error: r2: task 3: Exited with exit code 78\n", {});
    CHECK(root_cause(f, ClassifyPolicy{}).cls.cls == FailureClass::UserError);
}

TEST_CASE("gputopo run: Python's exception line", "[job][root]") {
    CHECK(find_exception_line(kZeroDivision) == "ZeroDivisionError: division by zero");
    CHECK(find_exception_line(std::string(kPeerLost) + "WARNING: teardown\n").rfind("RuntimeError: [", 0) == 0);
    CHECK(find_exception_line("Traceback (most recent call last):\n  File \"x\", line 1\nKeyboardInterrupt\n") == "KeyboardInterrupt");
    CHECK(find_exception_line("ZeroDivisionError: no traceback here\n").empty());
    // torch 2.x puts "[rankN]: " before each line of an exception in a distributed job.
    CHECK(find_exception_line("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"t.py\", line 3\n"
                              "[rank1]: ZeroDivisionError: division by zero\n") == "ZeroDivisionError: division by zero");
    RankOutput torch2(4);
    const std::string t2 = " 1: [rank1]: Traceback (most recent call last):\n 1: [rank1]: ZeroDivisionError: division by zero\n";
    torch2.feed(t2.data(), t2.size(), true);
    CHECK(torch2.rank_exception(1) == "ZeroDivisionError: division by zero");
}

TEST_CASE("gputopo run: srun's labels come off, each rank's stderr is kept apart, bounded", "[job][root]") {
    size_t at = 0;
    CHECK(line_label(" 3: hello", 8, at) == 3);
    CHECK(at == 4);
    CHECK(line_label("12: x", 8, at) == -1);  // no such rank
    CHECK(line_label("12:30 the time", 100, at) == -1);
    CHECK(line_label("srun: error: x", 8, at) == -1);
    CHECK(line_label("3:", 8, at) == 3);
    RankOutput out(16);
    const std::string a = " 3: Traceback (most recent call last):\n 3: ZeroDivi",
                      b = "sionError: division by zero\n 1: fine\nsrun: error: r2: task 3: Exited with exit code 1\n";
    std::string relayed = out.feed(a.data(), a.size(), true);
    relayed += out.feed(b.data(), b.size(), true);
    CHECK(relayed == "Traceback (most recent call last):\nZeroDivisionError: division by zero\nfine\n"
                     "srun: error: r2: task 3: Exited with exit code 1\n");
    CHECK(find_exception_line(out.rank_tail(3)) == "ZeroDivisionError: division by zero");
    CHECK(out.rank_tail(1) == "fine\n");
    CHECK(out.srun_tail() == "srun: error: r2: task 3: Exited with exit code 1\n");
    // stdout is relayed too, and never taken as evidence.
    CHECK(out.feed("15: step 10 loss 0.3\n", 21, false) == "step 10 loss 0.3\n");
    CHECK(out.rank_tail(15).empty());
    // Memory is bounded: per rank, per line, and in the number of ranks kept.
    RankOutput small(1000, true, 4, 64);
    for (int r = 0; r < 1000; ++r) {
        std::string line = std::to_string(r) + ": " + std::string(200, 'x') + "\n";
        small.feed(line.data(), line.size(), true);
    }
    CHECK(small.ranks_seen().size() == 4);
    CHECK(small.rank_tail(0).size() <= 64);
    std::string endless(3 * RankOutput::kMaxLine, 'y');
    CHECK(small.feed(endless.data(), endless.size(), false).size() >= 2 * RankOutput::kMaxLine);
    // The exception is kept however much the rank prints after it (torch 2's teardown warnings).
    RankOutput chatty(4, true, 4, 256);
    std::string lines = std::string(" 1: Traceback (most recent call last):\n 1:   File \"t.py\", line 3\n") +
                        " 1: ZeroDivisionError: division by zero\n";
    for (int i = 0; i < 50; ++i) lines += " 1: [rank1]:[W1205] Warning: process group has NOT been destroyed\n";
    chatty.feed(lines.data(), lines.size(), true);
    CHECK(find_exception_line(chatty.rank_tail(1)).empty());
    CHECK(chatty.rank_exception(1) == "ZeroDivisionError: division by zero");
    // A user who labels srun's output keeps the labels.
    RankOutput kept(4, false);
    CHECK(kept.feed("2: x\n", 5, true) == "2: x\n");
}

TEST_CASE("gputopo run: heartbeat files carry progress", "[job][hang]") {
    CHECK(parse_beat("57 1765000000.5\n", 1).progress == 57);
    CHECK(parse_beat("", 1).progress == -1);            // touched
    CHECK(parse_beat("57", 1).progress == -1);
    CHECK(parse_beat("57 x\n", 1).progress == -1);
    CHECK(parse_beat("1234567890123456789 1\n", 1).progress == -1);  // more than 15 digits
}

namespace {
// Ranks 0-3 on r1, r2 (2 per node); `progress` per rank, the step created at 0.
std::vector<RankBeat> beats(std::vector<long long> progress, std::vector<double> progress_seen, std::vector<double> alive_seen) {
    std::vector<RankBeat> v(progress.size());
    for (size_t i = 0; i < v.size(); ++i) {
        v[i].progress = progress[i];
        v[i].started = progress[i] != 0;
        v[i].progress_seen = progress_seen[i];
        v[i].alive_seen = alive_seen[i];
    }
    return v;
}
const std::vector<std::string> kSlots = {"r1", "r2"};
HangPolicy policy(double hang, double startup = 600) {
    HangPolicy p;
    p.hang_timeout_s = hang;
    p.startup_timeout_s = startup;
    return p;
}
}  // namespace

TEST_CASE("gputopo run: a hang is blamed by progress and liveness, not by the heartbeat files' age", "[job][hang]") {
    // Every rank stuck in step 50's collective; rank 3 stopped (SIGSTOP): its writer stopped too.
    auto b = beats({50, 50, 50, 50}, {100, 100.4, 100.2, 99.9}, {139, 139.5, 139.2, 101});
    auto v = judge_hang(b, 0, 140, policy(10), kSlots, 2);
    REQUIRE(v);
    CHECK((v->rank == 3 && v->node == "r2"));
    CHECK_THAT(v->evidence, Catch::Contains("writer stopped"));
    // Rank 1 stuck in its own code one step behind; the others wait in the next collective.
    b = beats({51, 50, 51, 51}, {120, 110, 120.5, 120.2}, {139, 139, 139, 139});
    v = judge_hang(b, 0, 140, policy(10), kSlots, 2);
    REQUIRE(v);
    CHECK((v->rank == 1 && v->node == "r1"));
    CHECK_THAT(v->evidence, Catch::Contains("stopped at step 50"));
    // Every rank waits in the same step and lives: no evidence, no node blamed
    // (the oldest file, rank 0's here, is not evidence).
    b = beats({50, 50, 50, 50}, {100, 100.4, 100.2, 100.1}, {139, 139, 139, 139});
    v = judge_hang(b, 0, 140, policy(10), kSlots, 2);
    REQUIRE(v);
    CHECK(v->rank == -1);
    CHECK(v->node.empty());
    // Within the timeout: no hang.
    CHECK_FALSE(judge_hang(b, 0, 105, policy(10), kSlots, 2));
}

TEST_CASE("gputopo run: a rank before its first step has the startup timeout", "[job][hang]") {
    // Rank 2 still importing torch 40 s after the step began; --hang-timeout 10, startup 120.
    auto b = beats({3, 3, 0, 3}, {39, 39, 0, 39}, {39, 39, -1, 39});
    CHECK_FALSE(judge_hang(b, 0, 40, policy(10, 120), kSlots, 2));
    auto v = judge_hang(b, 0, 130, policy(10, 120), kSlots, 2);
    REQUIRE(v);  // the others stalled meanwhile too: the rank that never started is the suspect
    CHECK((v->startup && v->rank == 2 && v->node == "r2"));
}

TEST_CASE("gputopo run: the tracker reads progress on its own clock", "[job][hang]") {
    BeatTracker t(2, 1000);
    t.update(0, parse_beat("", 990), 1001);  // a file of an earlier attempt
    CHECK_FALSE(t.ranks()[0].started);
    t.update(0, parse_beat("1 1001\n", 1001), 1002);
    t.update(1, parse_beat("0 1001\n", 1001), 1002);
    CHECK(t.ranks()[0].started);
    CHECK_FALSE(t.ranks()[1].started);
    // A file dated 2030 changes nothing but liveness: progress is what counts.
    t.update(0, parse_beat("1 1001\n", 1.9e9), 1010);
    CHECK(t.ranks()[0].progress_seen == 1002);
    CHECK(t.ranks()[0].alive_seen == 1010);
}

TEST_CASE("gputopo run: the state directory is the user's own; files in it are read safely", "[job][files]") {
    char tmpl[] = "/tmp/gputopo-run-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string d = tmpl;
    CHECK(own_directory(d + "/state", "--state-dir").empty());
    struct stat st {};
    REQUIRE(::stat((d + "/state").c_str(), &st) == 0);
    CHECK((st.st_mode & 077) == 0);
    CHECK(own_directory(d + "/state", "--state-dir").empty());  // again (a requeued job): accepted
    REQUIRE(::symlink((d + "/state").c_str(), (d + "/link").c_str()) == 0);
    CHECK_THAT(own_directory(d + "/link", "--state-dir"), Catch::Contains("not a directory"));
    REQUIRE(::mkdir((d + "/open").c_str(), 0777) == 0);
    REQUIRE(::chmod((d + "/open").c_str(), 0777) == 0);
    CHECK_THAT(own_directory(d + "/open", "--state-dir"), Catch::Contains("can be written by others"));
    // A FIFO named like the checkpoint report is not waited on; a link is not followed.
    REQUIRE(::mkfifo((d + "/state/checkpoint").c_str(), 0600) == 0);
    CHECK(last_checkpoint(d + "/state/checkpoint").empty());
    ::unlink((d + "/state/checkpoint").c_str());
    REQUIRE(::symlink("/etc/hostname", (d + "/state/checkpoint").c_str()) == 0);
    CHECK(last_checkpoint(d + "/state/checkpoint").empty());
    ::unlink((d + "/state/checkpoint").c_str());
    std::ofstream(d + "/state/checkpoint") << "/ckpt/step-40\x1b[2J\nsecond line\n";
    CHECK(last_checkpoint(d + "/state/checkpoint") == "/ckpt/step-40?[2J");
    CHECK(read_beat("/dev/zero").exists == false);
    CHECK(recorded_restarts(d + "/state") == 0);
    record_restarts(d + "/state", 3);
    CHECK(recorded_restarts(d + "/state") == 3);
    CHECK(absolute_path("x/y").rfind("/", 0) == 0);
    CHECK(absolute_path("/a") == "/a");
    CHECK(std::system(("rm -rf " + d).c_str()) == 0);
}

TEST_CASE("gputopo run: event lines name each key once; the log is never opened through a link", "[job][files]") {
    Event e("step_end");
    e.add("node", "r2").add("rank", 3);
    const std::string line = e.to_json(EventContext{"7", "job", 0, -1, "r1"}, 1.7e9);
    CHECK(line.find("\"node\"") == line.rfind("\"node\""));
    CHECK(line.find("\"rank\"") == line.rfind("\"rank\""));
    CHECK_THAT(line, Catch::Contains("\"node\": \"r2\""));
    char tmpl[] = "/tmp/gputopo-run-log.XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::string d = tmpl;
    const std::string victim = d + "/victim";
    std::ofstream(victim) << "keep\n";
    REQUIRE(::symlink(victim.c_str(), (d + "/gputopo-launch.7.job.jsonl").c_str()) == 0);
    EventLog log;
    std::string err;
    CHECK_FALSE(log.open(d, EventContext{"7", "job", 0, -1, "r1"}, err));
    CHECK_THAT(err, Catch::Contains("symbolic link"));
    std::ifstream in(victim);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(content == "keep\n");
    CHECK(std::system(("rm -rf " + d).c_str()) == 0);
}

TEST_CASE("gputopo run: option messages read as a person writes numbers", "[job]") {
    CHECK_THROWS_WITH(parse_job_options({"--hang-timeout", "5q", "--", "p"}),
                      "--hang-timeout '5q': expected seconds (a number, or with s, m, h, d) from 1 to 604800 s");
    CHECK(parse_job_options({"--startup-timeout", "15m", "--", "p"}).startup_timeout_s == 900);
}

TEST_CASE("gputopo run: a rank hung in its own code is told from the ranks waiting for it in a collective", "[job][hang]") {
    Beat b = parse_beat("29 1765000000.5 u train.py:57\n", 1);
    CHECK((b.progress == 29 && b.state == 'u' && b.where == "train.py:57"));
    CHECK(parse_beat("29 1765000000.5 c __init__.py:197\n", 1).state == 'c');
    CHECK(parse_beat("29 1765000000.5 x y\n", 1).state == '-');
    // Every rank at step 29 and alive; rank 1 sleeps in train.py, the others wait in backward's allreduce.
    auto v4 = beats({29, 29, 29, 29}, {100, 100.1, 100.2, 100.1}, {139, 139, 139, 139});
    for (auto* r : {&v4[0], &v4[2], &v4[3]}) {
        r->state = 'c';
        r->where = "__init__.py:197";
    }
    v4[1].state = 'u';
    v4[1].where = "train.py:57";
    auto v = judge_hang(v4, 0, 140, policy(10), kSlots, 2);
    REQUIRE(v);
    CHECK((v->rank == 1 && v->node == "r1"));
    CHECK_THAT(v->evidence, Catch::Contains("train.py:57"));
}
