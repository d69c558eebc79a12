#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "launcher/failure/events.hpp"
#include "launcher/child/hooks.hpp"
#include "launcher/requeue/slurm_ctl.hpp"

using namespace gputopo::launch;

namespace {
double local_time(int y, int mo, int d, int h, int mi, int sec) {
    tm t{};
    t.tm_year = y - 1900;
    t.tm_mon = mo - 1;
    t.tm_mday = d;
    t.tm_hour = h;
    t.tm_min = mi;
    t.tm_sec = sec;
    t.tm_isdst = -1;
    return static_cast<double>(mktime(&t));
}
}  // namespace

TEST_CASE("squeue job record parsing", "[launcher]") {
    // The shape of squeue_job_argv()'s output (seen from Slurm 22.05.8).
    JobInfo j = parse_squeue_job("12|1|1|2|2030-01-02T03:04:05|RUNNING|my run gputopo:exclude=n2|\n");
    CHECK(j.known);
    CHECK(j.batch);
    CHECK(j.requeue_allowed);
    CHECK(j.restarts == 2);
    CHECK(j.state == "RUNNING");
    CHECK(j.comment == "my run gputopo:exclude=n2");
    CHECK(j.end_time == Approx(local_time(2030, 1, 2, 3, 4, 5)));
    CHECK(parse_squeue_job("3|0|0|0|NONE|PENDING|(null)|\n").comment.empty());
    CHECK(parse_squeue_job("3|0|0|0|NONE|PENDING|(null)|\n").end_time < 0);
    CHECK_FALSE(parse_squeue_job("slurm_load_jobs error: Invalid job id specified\n").known);
    CHECK_FALSE(parse_squeue_job("").known);
    CHECK(parse_slurm_time("Unknown") < 0);
    // The command asks for exactly the fields the parser reads, comment last.
    auto argv = squeue_job_argv("12");
    CHECK(argv.back() == "--Format=JobID:|,BatchFlag:|,Requeue:|,RestartCnt:|,EndTime:|,State:|,Comment:|");
    CHECK(std::find(argv.begin(), argv.end(), "--jobs=12") != argv.end());
}

TEST_CASE("squeue job record: user text cannot pose as a field (finding 8)", "[launcher]") {
    // The comment is the user's: '|', "Key=" text, newlines, a fake record.
    JobInfo j = parse_squeue_job("7|1|1|1|NONE|RUNNING|x|0|0|99999999999|NONE|FAILED Restarts=99999999999 Requeue=0|\n");
    CHECK(j.known);
    CHECK(j.batch);
    CHECK(j.requeue_allowed);
    CHECK(j.restarts == 1);
    CHECK(j.state == "RUNNING");
    CHECK(j.comment == "x|0|0|99999999999|NONE|FAILED Restarts=99999999999 Requeue=0");
    // A fake second record after a newline: not one job's line (issue 20, H9).
    CHECK_FALSE(parse_squeue_job("7|1|1|1|NONE|RUNNING|x\n7|0|0|5|NONE|FAILED|gputopo:exclude=n9|\n").known);
    // Numbers out of range or not numbers: unknown, never an exception.
    CHECK_NOTHROW(parse_squeue_job("7|1|1|99999999999|NONE|RUNNING||\n"));
    CHECK_FALSE(parse_squeue_job("7|1|1|99999999999|NONE|RUNNING||\n").known);
    CHECK_FALSE(parse_squeue_job("7|1|1|-1|NONE|RUNNING||\n").known);
    CHECK_FALSE(parse_squeue_job("7|yes|1|0|NONE|RUNNING||\n").known);
    // A field split over lines is not one job's record.
    CHECK_FALSE(parse_squeue_job("7|1\n|1|0|NONE|RUNNING||\n").known);
}

TEST_CASE("squeue output of two lines is no job record, so nothing is written back as Comment (issue 20, H9)",
          "[launcher]") {
    // A heterogeneous job: squeue --jobs=J prints one line per component.
    const std::string het = "12+0|1|1|0|NONE|RUNNING|first|\n12+1|1|1|0|NONE|RUNNING|second|\n";
    JobInfo j = parse_squeue_job(het);
    CHECK_FALSE(j.known);
    CHECK(j.comment.empty());
    CHECK_FALSE(parse_squeue_job("12|1|1|0|NONE|RUNNING|a\r\nb|\n").known);
    // One line (with its newline, or a CRLF) is still one record.
    CHECK(parse_squeue_job("12+0|1|1|0|NONE|RUNNING|first|\n").comment == "first");
    CHECK(parse_squeue_job("12|1|1|0|NONE|RUNNING|a|b|\r\n").comment == "a|b");
}

TEST_CASE("KillWait from scontrol show config", "[launcher]") {
    CHECK(parse_kill_wait("JobRequeue              = 1\nKillWait                = 30 sec\nKillOnBadExit = 0\n") == Approx(30));
    CHECK(parse_kill_wait("KillOnBadExit = 0\n") < 0);
    CHECK_NOTHROW(parse_kill_wait("KillWait = " + std::string(400, '9') + " sec\n"));
    CHECK(parse_kill_wait("KillWait = " + std::string(400, '9') + " sec\n") < 0);
}

TEST_CASE("Young/Daly checkpoint interval", "[launcher]") {
    // C = 60 s, MTBF per node 1000 h, 10 nodes: M = 100 h = 360000 s.
    YoungDaly y = young_daly(60, 1000 * 3600.0, 10);
    CHECK(y.mtbf_job_s == Approx(360000));
    CHECK(y.interval_s == Approx(std::sqrt(2.0 * 60 * 360000)));
    CHECK_THAT(y.explain(), Catch::Contains("C=60.0s") && Catch::Contains("10 nodes"));
    // Never shorter than twice the cost.
    CHECK(young_daly(100, 10, 1000).interval_s == Approx(200));
}

TEST_CASE("checkpoint hooks: which ranks run the command, deadlines", "[launcher]") {
    CHECK(runs_command_hook(HookRanks::Zero, 0, 0));
    CHECK_FALSE(runs_command_hook(HookRanks::Zero, 4, 0));
    CHECK(runs_command_hook(HookRanks::Node, 4, 0));
    CHECK_FALSE(runs_command_hook(HookRanks::Node, 5, 1));
    CHECK(runs_command_hook(HookRanks::All, 5, 1));
    CHECK(hook_deadline(Trigger::Term, 1000, 5000, 30) == Approx(1030));
    CHECK(hook_deadline(Trigger::PreTimeout, 1000, 5000, 30) == Approx(5030));
    CHECK(hook_deadline(Trigger::PreTimeout, 1000, -1, 30) < 0);
    CHECK(hook_deadline(Trigger::Term, 1000, -1, -1) == Approx(1030));  // Slurm's default KillWait
    CHECK(format_duration(45) == "45.0s");
    CHECK(format_duration(3725) == "1h02m05s");
}

TEST_CASE("event lines are JSON with the context first", "[launcher]") {
    EventContext ctx{"12", "0", 1, 3, "n\"2"};
    Event e("hook_end");
    e.add("duration_s", 1.5).add("ok", true).add("status", "exit 0").add("n", 4);
    std::string j = e.to_json(ctx, 0);
    CHECK(j == "{\"time\": \"1970-01-01T00:00:00.000Z\", \"event\": \"hook_end\", \"job\": \"12\", \"step\": \"0\", "
               "\"restart\": 1, \"rank\": 3, \"node\": \"n\\\"2\", \"schema_version\": 1, \"duration_s\": 1.5, \"ok\": true, "
               "\"status\": \"exit 0\", \"n\": 4}");
}

TEST_CASE("slurm.conf values: ProctrackType decides whether Slurm signals every process", "[launcher]") {
    std::string conf = "# ProctrackType=proctrack/pgid\nClusterName=x\n  proctracktype = proctrack/cgroup # comment\nKillWait=5\n";
    CHECK(slurm_conf_value(conf, "ProctrackType") == "proctrack/cgroup");
    CHECK(slurm_conf_value(conf, "KillWait") == "5");
    CHECK(slurm_conf_value(conf, "TaskPlugin") == "");
    CHECK_FALSE(proctrack_signals_all("proctrack/cgroup"));  // only the task itself, SIGKILL apart
    CHECK(proctrack_signals_all("proctrack/linuxproc"));
    CHECK_FALSE(proctrack_signals_all("proctrack/pgid"));
    CHECK_FALSE(proctrack_signals_all(""));
}

TEST_CASE("control commands finish when Slurm ends the step; the user's preflight does not", "[launcher]") {
    // Slurm 24.11 ends the step's processes while `scontrol requeue` (run
    // inside the step) waits for its answer: the RPC must not die with them.
    const std::vector<std::string> cmd = {"/bin/sh", "-c", "kill -TERM $$; kill -INT $$; kill -HUP $$; echo answered"};
    CommandResult shielded = run_command(cmd, 10);
    CHECK(shielded.status == 0);
    CHECK(shielded.output == "answered\n");
    CommandResult plain = run_command(cmd, 10, Signals::Default);
    CHECK(plain.status == -1);
    CHECK(plain.output.empty());
}
