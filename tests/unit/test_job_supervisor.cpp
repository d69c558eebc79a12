// `gputopo run` itself (the built CLI), driven without a cluster: fake srun,
// squeue, scancel, scontrol and sinfo on PATH play Slurm. What is checked is what
// the supervisor did: its exit status and messages, how often it started srun,
// which steps it cancelled, whether it asked for a requeue.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/unit/cli_runner.hpp"

using gputopo_test::cli_or_skip;
using gputopo_test::run_cli;
using gputopo_test::slurp;

namespace {

struct FakeSlurm {
    std::string dir;
    FakeSlurm() {
        char tmpl[] = "/tmp/gputopo-fake-slurm.XXXXXX";
        REQUIRE(::mkdtemp(tmpl));
        dir = tmpl;
        REQUIRE(::mkdir((dir + "/bin").c_str(), 0755) == 0);
        REQUIRE(::mkdir((dir + "/work").c_str(), 0755) == 0);
        // The job's steps: 7.0 (a monitoring step of the user's) always; 7.1 once srun started.
        tool("squeue", "if [ -e " + dir + "/srun.started ]; then printf '7.0|monitor\\n7.1|python\\n'; "
                       "else printf '7.0|monitor\\n'; fi");
        tool("scancel", "echo \"$*\" >> " + dir + "/scancel.log");
        tool("scontrol", "echo \"$*\" >> " + dir + "/scontrol.log");
        tool("sinfo", "true");
    }
    ~FakeSlurm() {
        int rc = std::system(("rm -rf " + dir).c_str());
        (void)rc;
    }
    void tool(const std::string& name, const std::string& body) {
        std::ofstream(dir + "/bin/" + name) << "#!/bin/sh\n" << body << "\n";
        REQUIRE(::chmod((dir + "/bin/" + name).c_str(), 0755) == 0);
    }
    // srun: records its arguments and start, then runs `body`.
    void srun(const std::string& body) {
        tool("srun", "echo \"$*\" >> " + dir + "/srun.log\ntouch " + dir + "/srun.started\n" + body);
    }
    gputopo_test::CliResult run(const std::string& cli, const std::string& options, const std::string& extra_env = "") {
        const std::string script = "cd " + dir + "/work && PATH=" + dir + "/bin:$PATH SLURM_JOB_ID=7 SLURM_JOB_NODELIST='n[1-3]' "
                                   "SLURM_NTASKS_PER_NODE=2 " + extra_env + " exec " + cli + " run " + options + " -- python train.py";
        return run_cli("/bin/sh", {"-c", script});
    }
    int sruns() const {
        std::string log = slurp(dir + "/srun.log");
        int n = 0;
        for (char c : log) n += c == '\n';
        return n;
    }
};

}  // namespace

TEST_CASE("gputopo run (fake Slurm): a user bug on one rank ends the job with its exception, no spare, no requeue", "[job][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    FakeSlurm f;
    // Labelled output as srun --label writes it: rank 2 dies of its peer, rank 3 raised; srun reports rank 2 first.
    f.srun("printf ' 2: Traceback (most recent call last):\\n 2: RuntimeError: [gloo/transport/tcp/pair.cc:598] "
           "Connection closed by peer [127.0.0.1]:1\\n' >&2\n"
           "printf ' 3: Traceback (most recent call last):\\n 3:   File \"train.py\", line 9\\n"
           " 3: ZeroDivisionError: division by zero\\n' >&2\n"
           "printf ' 0: step 49 loss 0.1\\n'\n"
           "echo 'srun: error: n2: task 2: Exited with exit code 1' >&2\n"
           "echo 'srun: error: n2: task 3: Exited with exit code 1' >&2\nexit 1");
    auto r = f.run(cli, "--spares 1 --max-restarts 3");
    INFO(r.err);
    CHECK(r.rc == 1);
    CHECK(f.sruns() == 1);
    CHECK_THAT(r.err, Catch::Contains("user_error: rank 3 on n2: ZeroDivisionError: division by zero"));
    CHECK_THAT(r.err, Catch::Contains("no spare used, no requeue"));
    CHECK_THAT(r.out, Catch::Contains("step 49 loss 0.1"));     // stdout relayed, label off
    CHECK(r.out.find(" 0: ") == std::string::npos);
    CHECK_THAT(r.err, Catch::Contains("\nZeroDivisionError: division by zero\n"));
    CHECK(slurp(f.dir + "/scontrol.log").find("requeue") == std::string::npos);
    CHECK_THAT(slurp(f.dir + "/srun.log"), Catch::Contains("--label"));
}

TEST_CASE("gputopo run (fake Slurm): a line shaped like srun's with a huge number does not end the supervisor", "[job][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    FakeSlurm f;
    f.srun("echo 'srun: error: n1: task 0: Exited with exit code 99999999999' >&2\n"
           "echo ' 0: srun: error: n1: task 0: Exited with exit code 99999999999' >&2\nsleep 1\nexit 0");
    auto r = f.run(cli, "--max-restarts 0");
    INFO(r.err);
    CHECK(r.rc == 0);
    CHECK(r.err.find("stoi") == std::string::npos);
}

TEST_CASE("gputopo run (fake Slurm): a hang cancels its own step only, never the job's other steps", "[job][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    FakeSlurm f;
    f.srun("exec sleep 30");  // no rank ever beats
    auto r = f.run(cli, "--hang-timeout 1 --startup-timeout 2 --kill-timeout 1 --max-restarts 0");
    INFO(r.err);
    CHECK(r.rc != 0);
    CHECK_THAT(r.err, Catch::Contains("startup hang"));
    const std::string cancelled = slurp(f.dir + "/scancel.log");
    CHECK_THAT(cancelled, Catch::Contains("--signal=KILL 7.1"));
    CHECK(cancelled.find("7.0") == std::string::npos);
}

TEST_CASE("gputopo run (fake Slurm): no spare left and no requeue asked: the job ends, it is not requeued", "[job][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    FakeSlurm f;
    f.srun("echo 'srun: error: n1: task 0: Killed' >&2\nexit 137");
    // squeue's job line for the requeue question: Requeue=0, no record.
    f.tool("squeue", "case \"$*\" in *-s*) printf '7.0|monitor\\n';; *) printf '7|1|0|0|None|RUNNING||\\n';; esac");
    auto r = f.run(cli, "--max-restarts 3");
    INFO(r.err);
    CHECK(r.rc == 137);
    CHECK(f.sruns() == 1);
    CHECK_THAT(r.err, Catch::Contains("did not ask for a requeue"));
    CHECK(slurp(f.dir + "/scontrol.log").find("requeue") == std::string::npos);
}

TEST_CASE("gputopo run (fake Slurm): a state directory another user made first is refused", "[job][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty() || ::geteuid() != 0) return;  // chown needs root (CI runs as root)
    FakeSlurm f;
    f.srun("exit 0");
    const std::string planted = f.dir + "/work/gputopo-run.7";
    REQUIRE(::mkdir(planted.c_str(), 0777) == 0);
    REQUIRE(::chown(planted.c_str(), 65534, 65534) == 0);
    auto r = f.run(cli, "");
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("state directory " + planted + " exists and is owned by uid 65534"));
    CHECK(f.sruns() == 0);
}

TEST_CASE("gputopo run (fake Slurm): counts from the environment are checked", "[job][cli]") {
    const std::string cli = cli_or_skip();
    if (cli.empty()) return;
    FakeSlurm f;
    f.srun("exit 0");
    auto r = f.run(cli, "", "SLURM_NTASKS_PER_NODE=2147483647");
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("SLURM_NTASKS_PER_NODE '2147483647': expected a whole number from 1 to 4096"));
    r = f.run(cli, "", "SLURM_RESTART_COUNT=-5");
    CHECK(r.rc == 2);
    CHECK_THAT(r.err, Catch::Contains("SLURM_RESTART_COUNT '-5'"));
}
