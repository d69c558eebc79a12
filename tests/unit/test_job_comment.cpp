// The job's Comment record (launcher/state/job_comment.hpp) is one format with
// three readers and writers: the launcher (C++), etc/epilog_slurmctld_gputopo.sh
// (gputopo:exclude=) and etc/job_submit.lua (gputopo:requeue=asked). The same
// strings go to all of them; each must read them the same way.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/state/job_comment.hpp"
#include "tests/unit/fixtures.hpp"
#include "tests/unit/lua_runner.hpp"

using namespace gputopo::launch;

namespace {

// What the epilog did with `comment` (the job's Comment as squeue prints it,
// ExcNodeList empty): the arguments it gave `scontrol update`, "" when it made
// no call. Its squeue and scontrol are stand-ins (GPUTOPO_SQUEUE, GPUTOPO_SCONTROL).
std::string epilog_update(const std::string& comment) {
    char t[] = "/tmp/gputopo-comment-XXXXXX";
    REQUIRE(mkdtemp(t));
    const std::string d = t;
    std::ofstream(d + "/comment") << "(null)|" << comment << "\n";
    std::ofstream(d + "/squeue") << "#!/bin/sh\ncat '" << d << "/comment'\n";
    std::ofstream(d + "/scontrol") << "#!/bin/sh\nshift\necho \"$*\" > '" << d << "/update'\n";
    chmod((d + "/squeue").c_str(), 0755);
    chmod((d + "/scontrol").c_str(), 0755);
    const std::string cmd = "env -i PATH=/usr/bin:/bin SLURM_JOB_ID=42 SLURM_CONF=/nonexistent GPUTOPO_SQUEUE='" + d +
                            "/squeue' GPUTOPO_SCONTROL='" + d + "/scontrol' bash '" + gputopo_test::source_dir() +
                            "/etc/epilog_slurmctld_gputopo.sh'";
    const int rc = std::system(cmd.c_str());
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);  // it never holds up slurmctld
    std::ifstream in(d + "/update");
    std::string update;
    std::getline(in, update);
    for (const char* f : {"/comment", "/squeue", "/scontrol", "/update"}) std::remove((d + f).c_str());
    rmdir(d.c_str());
    return update;
}

// The same reading from the epilog's update: the excluded nodes and the back-off.
ExclusionRecord epilog_reading(const std::string& update) {
    ExclusionRecord r;
    std::istringstream words(update);
    for (std::string w; words >> w;) {
        if (w.rfind("ExcNodeList=", 0) == 0) {
            std::stringstream list(w.substr(12));
            for (std::string n; std::getline(list, n, ',');)
                if (!n.empty() && std::find(r.nodes.begin(), r.nodes.end(), n) == r.nodes.end()) r.nodes.push_back(n);
        } else if (w.rfind("StartTime=now+", 0) == 0) {
            r.backoff_s = std::stod(w.substr(14));
        }
    }
    return r;
}

}  // namespace

TEST_CASE("the job's Comment: gputopo:exclude= read alike by the launcher and the EpilogSlurmctld script (issue 35)",
          "[launcher][comment]") {
    const std::vector<std::string> comments = {
        "",
        "my run 7",
        "gputopo:exclude=n2",
        "my run 7 gputopo:exclude=n2,n5;backoff=120",
        "gputopo:exclude=n1 note gputopo:exclude=n3;backoff=30\tmore",
        "gputopo:exclude=n1;backoff=30 gputopo:exclude=n3",          // the later back-off-less record keeps 30
        "gputopo:exclude=n1;backoff=1.5",                            // whole seconds only
        "gputopo:exclude=n1;backoff=x",
        "gputopo:exclude=n1;backoff=1234567890",                     // more than 9 digits
        "gputopo:exclude=n1;backoff=0",
        "gputopo:exclude=;backoff=60",                               // no node: the record counts for nothing
        "gputopo:exclude=n$(reboot);backoff=60 gputopo:exclude=n4",  // not a hostlist: that record only is ignored
        "gputopo:exclude=gpu-[01-02].rack_1 gputopo:cause=failed@n2/0.0 gputopo:requeue=asked",
        "x gputopo:exclude=n1,n1,n2",
    };
    for (const std::string& c : comments) {
        INFO("Comment: '" << c << "'");
        const ExclusionRecord ours = parse_exclusion_record(c);
        const std::string update = epilog_update(c);
        INFO("epilog: scontrol update " << update);
        CHECK(update.empty() == ours.nodes.empty());
        const ExclusionRecord epilog = epilog_reading(update);
        CHECK(std::set<std::string>(epilog.nodes.begin(), epilog.nodes.end()) ==
              std::set<std::string>(ours.nodes.begin(), ours.nodes.end()));
        CHECK(epilog.backoff_s == Approx(ours.nodes.empty() ? 0 : ours.backoff_s));
        // What the launcher writes is read back the same by both.
        const std::string merged = merge_exclusion_record(c, "n9", 60);
        const ExclusionRecord again = epilog_reading(epilog_update(merged));
        const ExclusionRecord ours_again = parse_exclusion_record(merged);
        CHECK(std::set<std::string>(again.nodes.begin(), again.nodes.end()) ==
              std::set<std::string>(ours_again.nodes.begin(), ours_again.nodes.end()));
        CHECK(again.backoff_s == Approx(60));
        CHECK(ours_again.backoff_s == Approx(60));
    }
}

TEST_CASE("the job's Comment: gputopo:requeue=asked written by job_submit.lua as the launcher writes and reads it (issue 35)",
          "[launcher][comment][lua]") {
    const std::vector<std::string> comments = {"", "my run 7", "gputopo:requeue=asked", "a gputopo:requeue=asked b",
                                               "gputopo:exclude=n2;backoff=60", "gputopo:requeue=askedxx"};
    const std::string d = gputopo_test::job_submit_dir("");
    REQUIRE(!d.empty());
    for (const std::string& c : comments) {
        INFO("Comment: '" << c << "'");
        const std::string out = gputopo_test::run_lua(R"(
slurm = { SUCCESS = 0, ERROR = -1, log_info = function() end, log_user = function() end }
assert(loadfile(")" + d + R"(/job_submit.lua"))()
local jd = { requeue = 1, comment = [==[)" + c + R"(]==], spank_job_env = {} }
assert(slurm_job_submit(jd, {}, 1000) == 0)
return "[" .. jd.comment .. "]")");
        if (out.empty()) {
            WARN("liblua5.1 is not installed: job_submit.lua not run");
            break;
        }
        CHECK(out == "[" + mark_requeue_asked(c) + "]");
        CHECK(comment_asks_requeue(out.substr(1, out.size() - 2)));
        // The other records stay readable after it.
        CHECK(parse_exclusion_record(out).nodes == parse_exclusion_record(c).nodes);
    }
    std::remove((d + "/job_submit.lua").c_str());
    std::remove((d + "/topology.conf").c_str());
    rmdir(d.c_str());
}
