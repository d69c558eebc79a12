// Slurm 25.11's --requeue=expedite (launcher/requeue/expedite.hpp): how the
// launcher sees it and what a final end does in such a job.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "launcher/requeue/expedite.hpp"
#include "launcher/requeue/requeue.hpp"
#include "launcher/requeue/requeue_asked.hpp"

using namespace gputopo::launch;

namespace {

// `scontrol show job` as 26.05 prints it (src/scontrol/info_job.c: the first
// line flush left, the others indented by three spaces; the job-flags line).
std::string show_job(const std::string& flags_line, const std::string& name = "train",
                     const std::string& comment = "") {
    std::string s = "JobId=41 JobName=" + name + "\n"
                    "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
                    "   Priority=1 Nice=0 Account=(null) QOS=(null)\n"
                    "   JobState=RUNNING Reason=None Dependency=(null)\n"
                    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0\n";
    if (!comment.empty()) s += "   Comment=" + comment + "\n";
    if (!flags_line.empty()) s += "   " + flags_line + "\n";
    s += "   Command=/w/job.sh\n   WorkDir=/w\n";
    return s;
}

struct FakeSlurm {
    std::string show;
    std::string squeue = "41|1|1|0|2026-12-05T14:00:00|RUNNING||\n";
    CommandResult update{0, ""};
    std::vector<std::string> ran;
    SlurmCommand runner() {
        return [this](const std::vector<std::string>& argv, double) -> CommandResult {
            std::string line;
            for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
            ran.push_back(line);
            if (argv.at(0) == "env") return {0, squeue};
            if (argv.at(1) == "update") return update;
            return {0, show};
        };
    }
};

}  // namespace

TEST_CASE("expedite: ExpeditedRequeue=Yes on the flags line, never from free text", "[launcher][expedite]") {
    CHECK(expedited_in_show_job(show_job("ExpeditedRequeue=Yes")));
    CHECK(expedited_in_show_job(show_job("GresAllowTaskSharing=Yes SpreadJob=Yes ExpeditedRequeue=Yes")));
    CHECK_FALSE(expedited_in_show_job(show_job("")));
    CHECK_FALSE(expedited_in_show_job(show_job("SpreadJob=Yes")));
    // A name or a Comment posing as the flag.
    CHECK_FALSE(expedited_in_show_job(show_job("", "x ExpeditedRequeue=Yes")));
    CHECK_FALSE(expedited_in_show_job(show_job("", "train", "ExpeditedRequeue=Yes")));
    CHECK_FALSE(expedited_in_show_job(show_job("", "train\n   ExpeditedRequeue=Yes x")));
    // The one-line form (-o) is not read.
    CHECK_FALSE(expedited_in_show_job("JobId=41 JobName=t Requeue=1 ExpeditedRequeue=Yes WorkDir=/w"));
}

TEST_CASE("expedite: a job requeued since this attempt is not requeued again", "[launcher][expedite]") {
    JobInfo now;
    now.known = true;
    now.restarts = 1;
    CHECK(requeued_since(now, 0));
    CHECK_FALSE(requeued_since(now, 1));
    CHECK_FALSE(requeued_since(now, -1));
    now.known = false;
    CHECK_FALSE(requeued_since(now, 0));
    // decide_requeue carries the attempt, so perform_requeue can tell.
    Options o;
    RequeueInputs in;
    in.in_batch_job = in.requeue_allowed = in.requeue_asked = true;
    in.restart_count = 2;
    Classification c;
    c.cls = FailureClass::GpuFault;
    c.evidence = "Xid 79";
    RequeueDecision d = decide_requeue(c, o, in);
    REQUIRE(d.action == RequeueAction::Requeue);
    CHECK(d.restart_count == 2);
}

TEST_CASE("expedite: a final end sets Requeue=0 only in an expedited job", "[launcher][expedite]") {
    FakeSlurm s;
    s.show = show_job("ExpeditedRequeue=Yes");
    FinalEnd f = settle_final_end("41", 0, "user_error", s.runner());
    CHECK(f.expedited);
    CHECK(f.requeue_cleared);
    REQUIRE(s.ran.size() == 3);
    CHECK(s.ran[2] == "scontrol update JobId=41 Requeue=0");
    CHECK(f.message.find("REQUEUE_HOLD") != std::string::npos);

    // Not expedited: one query, nothing changed, nothing said.
    FakeSlurm plain;
    plain.show = show_job("");
    f = settle_final_end("41", 0, "user_error", plain.runner());
    CHECK_FALSE(f.expedited);
    CHECK(plain.ran.size() == 1);
    CHECK(f.message.empty());

    // Slurm requeued it already (a node failure): left alone.
    FakeSlurm moved;
    moved.show = show_job("ExpeditedRequeue=Yes");
    moved.squeue = "41|1|1|1|2026-12-05T14:00:00|RUNNING||\n";
    f = settle_final_end("41", 0, "user_error", moved.runner());
    CHECK_FALSE(f.requeue_cleared);
    CHECK(moved.ran.size() == 2);
    CHECK(f.message.find("already requeued") != std::string::npos);

    // The update refused: said, with Slurm's words.
    FakeSlurm refused;
    refused.show = show_job("ExpeditedRequeue=Yes");
    refused.update = {1, "slurm_update error: Access/permission denied\n"};
    f = settle_final_end("41", 0, "user_error", refused.runner());
    CHECK_FALSE(f.requeue_cleared);
    CHECK(f.message.find("Access/permission denied") != std::string::npos);

    // Outside a job: nothing run.
    FakeSlurm none;
    f = settle_final_end("", 0, "user_error", none.runner());
    CHECK(none.ran.empty());
}

TEST_CASE("expedite: sbatch --requeue=expedite asked for a requeue", "[launcher][expedite][requeue_asked]") {
    CHECK(requeue_in_sbatch_args({"--requeue=expedite", "job.sh"}) == std::optional<bool>(true));
    CHECK(requeue_in_sbatch_args({"--requeue=expedite", "--no-requeue", "job.sh"}) == std::optional<bool>(false));
    CHECK(requeue_in_script("#!/bin/bash\n#SBATCH --requeue=expedite\nsrun x\n") == std::optional<bool>(true));
}
