#include <catch2/catch.hpp>

#include <cmath>
#include <ctime>

#include "launcher/events.hpp"
#include "launcher/hooks.hpp"
#include "launcher/slurm_ctl.hpp"

using namespace gputopo::launch;

TEST_CASE("scontrol show job -o record parsing", "[launcher]") {
    std::string rec =
        "JobId=12 JobName=train UserId=u(1) JobState=RUNNING Reason=None Requeue=1 Restarts=2 BatchFlag=1 "
        "EndTime=2030-01-02T03:04:05 ExcNodeList=n[2-3] Comment=my run gputopo:exclude=n2 NodeList=n[1,4] Power=\n";
    auto f = parse_scontrol_record(rec);
    CHECK(f["JobName"] == "train");
    CHECK(f["Comment"] == "my run gputopo:exclude=n2");
    CHECK(f["NodeList"] == "n[1,4]");
    CHECK(f["Power"] == "");
    JobInfo j = job_info_from_record(f);
    CHECK(j.known);
    CHECK(j.batch);
    CHECK(j.requeue_allowed);
    CHECK(j.restarts == 2);
    CHECK(j.exc_nodes == "n[2-3]");
    tm t{};
    t.tm_year = 130;
    t.tm_mon = 0;
    t.tm_mday = 2;
    t.tm_hour = 3;
    t.tm_min = 4;
    t.tm_sec = 5;
    t.tm_isdst = -1;
    CHECK(j.end_time == Approx(static_cast<double>(mktime(&t))));
    CHECK(parse_slurm_time("Unknown") < 0);
    CHECK_FALSE(job_info_from_record(parse_scontrol_record("slurm_load_jobs error: Invalid job id specified")).known);
    CHECK(job_info_from_record(parse_scontrol_record("JobId=3 Comment=(null) ExcNodeList=(null)")).comment.empty());
}

TEST_CASE("KillWait from scontrol show config", "[launcher]") {
    CHECK(parse_kill_wait("JobRequeue              = 1\nKillWait                = 30 sec\nKillOnBadExit = 0\n") == Approx(30));
    CHECK(parse_kill_wait("KillOnBadExit = 0\n") < 0);
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
    CHECK(proctrack_signals_all("proctrack/cgroup"));
    CHECK(proctrack_signals_all("proctrack/linuxproc"));
    CHECK_FALSE(proctrack_signals_all("proctrack/pgid"));
    CHECK_FALSE(proctrack_signals_all(""));
}
