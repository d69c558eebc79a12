#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "launcher/requeue/requeue.hpp"
#include "launcher/failure/root_cause.hpp"
#include "launcher/state/node_state.hpp"
#include "launcher/requeue/requeue_asked.hpp"

using namespace gputopo::launch;

namespace {
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/gputopo-requeue-XXXXXX";
        const char* d = mkdtemp(tmpl);
        if (!d) throw std::runtime_error("mkdtemp failed");
        path = d;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};
Classification gpu(bool local) {
    Classification c;
    c.cls = FailureClass::GpuFault;
    c.local = local;
    c.evidence = "exit code 1; stderr: NVRM: Xid 79";
    return c;
}
RequeueInputs batch(int restarts) {
    RequeueInputs in;
    in.in_batch_job = true;
    in.requeue_allowed = true;
    in.requeue_asked = true;
    in.restart_count = restarts;
    in.node = "n2";
    return in;
}
}  // namespace

TEST_CASE("requeue: retryable failure within the budget requeues and excludes a locally faulty node", "[launcher]") {
    Options o;
    o.max_restarts = 2;
    auto d = decide_requeue(gpu(true), o, batch(0));
    CHECK(d.action == RequeueAction::Requeue);
    CHECK(d.exclude_node == "n2");
    CHECK_THAT(d.message, Catch::Contains("restart 1 of 2") && Catch::Contains("n2"));
    auto remote = decide_requeue(gpu(false), o, batch(1));
    CHECK(remote.action == RequeueAction::Requeue);
    CHECK(remote.exclude_node.empty());
}

TEST_CASE("requeue: budget, permission and class", "[launcher]") {
    Options o;
    o.max_restarts = 2;
    auto d = decide_requeue(gpu(true), o, batch(2));
    CHECK(d.action == RequeueAction::BudgetExhausted);
    CHECK_THAT(d.message, Catch::Contains("budget exhausted") && Catch::Contains("2 of 2"));
    RequeueInputs no = batch(0);
    no.requeue_allowed = false;
    CHECK(decide_requeue(gpu(true), o, no).action == RequeueAction::NotAllowed);
    no = batch(0);
    no.in_batch_job = false;
    CHECK(decide_requeue(gpu(true), o, no).action == RequeueAction::NotAllowed);
    Options off = o;
    off.requeue = false;
    CHECK(decide_requeue(gpu(true), off, batch(0)).action == RequeueAction::NotAllowed);
    Classification user;
    user.cls = FailureClass::UserError;
    CHECK(decide_requeue(user, o, batch(0)).action == RequeueAction::None);
    Classification t;
    t.cls = FailureClass::Timeout;
    CHECK(decide_requeue(t, o, batch(0)).action == RequeueAction::None);
    Options tt = o;
    tt.requeue_on = {"timeout"};
    CHECK(decide_requeue(t, tt, batch(0)).action == RequeueAction::Requeue);
}

TEST_CASE("requeue: back-off doubles per restart", "[launcher]") {
    Options o;
    o.max_restarts = 5;
    o.backoff_s = 30;
    CHECK(decide_requeue(gpu(true), o, batch(0)).backoff_s == Approx(30));
    CHECK(decide_requeue(gpu(true), o, batch(2)).backoff_s == Approx(120));
    o.backoff_s = 0;
    CHECK(decide_requeue(gpu(true), o, batch(2)).backoff_s == 0);
}

TEST_CASE("requeue: exclusion record in the job comment", "[launcher]") {
    CHECK(merge_exclusion_record("", "n2", 0) == "gputopo:exclude=n2");
    std::string c = merge_exclusion_record("my run 7", "n2", 60);
    CHECK(c == "my run 7 gputopo:exclude=n2;backoff=60");
    std::string c2 = merge_exclusion_record(c, "n5", 120);
    CHECK(c2 == "my run 7 gputopo:exclude=n2,n5;backoff=120");
    CHECK(merge_exclusion_record(c2, "n2", 0) == "my run 7 gputopo:exclude=n2,n5");
    ExclusionRecord r = parse_exclusion_record(c2);
    CHECK(r.nodes == std::vector<std::string>{"n2", "n5"});
    CHECK(r.backoff_s == Approx(120));
    CHECK(parse_exclusion_record("nothing here").nodes.empty());
}

TEST_CASE("requeue: a second exclusion record keeps every node (finding 9)", "[launcher]") {
    // Two records (a user's copy, or one left by an older launcher): the new
    // node and all old ones end up in one record.
    std::string two = "gputopo:exclude=n1 note gputopo:exclude=n3;backoff=30\nmore";
    ExclusionRecord r = parse_exclusion_record(two);
    CHECK(r.nodes == std::vector<std::string>{"n1", "n3"});
    CHECK(r.backoff_s == Approx(30));
    std::string merged = merge_exclusion_record(two, "n2", 60);
    CHECK(parse_exclusion_record(merged).nodes == std::vector<std::string>{"n1", "n3", "n2"});
    CHECK(merged.find("gputopo:exclude=") == merged.rfind("gputopo:exclude="));
    CHECK_THAT(merged, Catch::Contains("note") && Catch::Contains("more"));
    // Garbage back-off values are ignored, not thrown.
    CHECK(parse_exclusion_record("gputopo:exclude=n1;backoff=1e999").backoff_s == 0);
    CHECK(parse_exclusion_record("gputopo:exclude=n1;backoff=x").backoff_s == 0);
}

TEST_CASE("requeue: one leader per key", "[launcher]") {
    TempDir tmp;
    std::string dir = private_state_dir(tmp.path);
    REQUIRE_FALSE(dir.empty());
    std::string key = "test" + std::to_string(::getpid());
    CHECK(claim_leadership(dir, key));
    CHECK_FALSE(claim_leadership(dir, key));
    CHECK(claim_leadership(dir, key + "b"));
    CHECK(claim_leadership("", key));  // no safe dir: slurmctld arbitrates
}

TEST_CASE("requeue: another user cannot take the node's leader claim (finding 11)", "[launcher]") {
    TempDir tmp;
    std::string key = "job1.0";
    // The old, predictable claim file in the shared base is irrelevant now.
    std::ofstream(tmp.path + "/gputopo-launch." + key + ".leader") << "";
    std::string dir = private_state_dir(tmp.path);
    REQUIRE_FALSE(dir.empty());
    CHECK(dir == tmp.path + "/gputopo-launch." + std::to_string(::geteuid()));
    struct stat st {};
    REQUIRE(::lstat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(claim_leadership(dir, key));
    // The private dir pre-created by someone else, as a symlink, or open to others: refused.
    TempDir other;
    std::string mine = other.path + "/gputopo-launch." + std::to_string(::geteuid());
    REQUIRE(::mkdir(mine.c_str(), 0777) == 0);
    REQUIRE(::chmod(mine.c_str(), 0777) == 0);
    CHECK(private_state_dir(other.path).empty());
    REQUIRE(::rmdir(mine.c_str()) == 0);
    REQUIRE(::symlink(tmp.path.c_str(), mine.c_str()) == 0);
    CHECK(private_state_dir(other.path).empty());
    REQUIRE(::unlink(mine.c_str()) == 0);
    if (::geteuid() == 0) {
        REQUIRE(::mkdir(mine.c_str(), 0700) == 0);
        REQUIRE(::chown(mine.c_str(), 65534, 65534) == 0);
        CHECK(private_state_dir(other.path).empty());
    }
    // --node-state-dir: %n is the node.
    CHECK(node_state_base("/x/%n/y", "n2", "/t") == "/x/n2/y");
}

TEST_CASE("root cause: one record per attempt in the Comment, peers find it, others dropped", "[launcher][root_cause]") {
    using namespace gputopo::launch;
    std::string c = merge_cause("my note gputopo:requeue=asked", {"failed", "n2", "0.0"});
    CHECK(c == "my note gputopo:requeue=asked gputopo:cause=failed@n2/0.0");
    CHECK(merge_cause(c, {"gpu_fault", "n3", "0.0"}) == c);  // the first record of an attempt stays
    auto r = find_cause(c, "0.0");
    REQUIRE(r);
    CHECK(r->cls == "failed");
    CHECK(r->node == "n2");
    CHECK_FALSE(find_cause(c, "0.1"));  // another attempt: not this one's cause
    std::string next = merge_cause(c, {"gpu_fault", "n3", "0.1"});
    CHECK(next == "my note gputopo:requeue=asked gputopo:cause=gpu_fault@n3/0.1");
    CHECK_FALSE(find_cause("gputopo:cause=broken", "0.0"));
    CHECK(is_root_cause(FailureClass::Failed));
    CHECK(is_root_cause(FailureClass::GpuFault));
    CHECK_FALSE(is_root_cause(FailureClass::PeerLost));
    CHECK_FALSE(is_root_cause(FailureClass::Preemption));
    CHECK(failure_class_from_name("gpu_fault") == FailureClass::GpuFault);
}

TEST_CASE("requeue: only a job that asked, never Slurm's JobRequeue=1 default alone", "[launcher][root_cause]") {
    using namespace gputopo::launch;
    CHECK(job_asked_requeue("gputopo:requeue=asked", true, "1"));
    CHECK(job_asked_requeue("", true, "0"));       // JobRequeue=0: Requeue=1 means --requeue
    CHECK_FALSE(job_asked_requeue("", true, "1"));  // the default alone
    CHECK_FALSE(job_asked_requeue("", true, ""));
    CHECK_FALSE(job_asked_requeue("gputopo:requeue=asked", false, "1"));  // --no-requeue later
    Options o;
    RequeueInputs in;
    in.in_batch_job = true;
    in.requeue_allowed = true;
    Classification g;
    g.cls = FailureClass::GpuFault;
    g.evidence = "Xid 79";
    auto d = decide_requeue(g, o, in);
    CHECK(d.action == RequeueAction::NotAllowed);
    CHECK_THAT(d.message, Catch::Contains("did not ask") && Catch::Contains("--requeue"));
    o.requeue_explicit = true;
    CHECK(decide_requeue(g, o, in).action == RequeueAction::Requeue);
}

TEST_CASE("another user who pre-creates the private directory only moves this user to the next base (issue 20, H4)",
          "[launcher]") {
    TempDir planted, fallback;
    const std::string mine = planted.path + "/gputopo-launch." + std::to_string(::geteuid());
    REQUIRE(::mkdir(mine.c_str(), 0777) == 0);
    REQUIRE(::chmod(mine.c_str(), 0777) == 0);  // as another user's open directory would be
    std::string note;
    const std::string dir = first_private_state_dir({planted.path, fallback.path}, &note);
    CHECK(dir == fallback.path + "/gputopo-launch." + std::to_string(::geteuid()));
    // Every base refused (and nowhere to make a fresh directory): "" and a note naming them.
    const std::string gone1 = planted.path + "/no/such", gone2 = fallback.path + "/no/such";
    CHECK(first_private_state_dir({gone1, gone2}, &note, {}).empty());
    CHECK_THAT(note, Catch::Contains(gone1 + "/gputopo-launch.") && Catch::Contains(gone2 + "/gputopo-launch."));
    // The order: --node-state-dir (%n expanded), /dev/shm when writable, TMPDIR, /tmp.
    std::vector<std::string> bases = node_state_bases("/x/%n", "n1", "/t");
    REQUIRE(bases.size() >= 3);
    CHECK(bases.front() == "/x/n1");
    CHECK(bases[bases.size() - 2] == "/t");
    CHECK(bases.back() == "/tmp");
    CHECK(node_state_bases("", "n1", "/tmp").back() == "/tmp");
    CHECK(std::count(bases.begin(), bases.end(), "/tmp") == 1);
}

namespace {
// This user's fresh directories in `base` (fresh_private_dir's names).
std::vector<std::string> fresh_dirs(const std::string& base) {
    std::vector<std::string> out;
    const std::string prefix = "gputopo-launch." + std::to_string(::geteuid()) + ".";
    for (const auto& e : std::filesystem::directory_iterator(base))
        if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}
// `dir` planted as another user would: open to all (and, as root, owned by nobody).
void plant(const std::string& dir) {
    REQUIRE(::mkdir(dir.c_str(), 0777) == 0);
    REQUIRE(::chmod(dir.c_str(), 0777) == 0);
    if (::geteuid() == 0) REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
}
}  // namespace

TEST_CASE("another user who plants the private directory in every base does not take it away (issue 33, finding 3)",
          "[launcher]") {
    TempDir shm, tmp;
    const std::string uid = std::to_string(::geteuid());
    plant(shm.path + "/gputopo-launch." + uid);
    plant(tmp.path + "/gputopo-launch." + uid);
    // Names shaped like the fresh ones, older than any this run makes: another user's, so not ours.
    plant(shm.path + "/gputopo-launch." + uid + ".0000000000000001.00000000");
    REQUIRE(::symlink(tmp.path.c_str(), (shm.path + "/gputopo-launch." + uid + ".0000000000000002.00000000").c_str()) == 0);
    // Eight tasks of one step starting together agree on one directory, made fresh.
    std::vector<std::string> results;
    std::vector<int> pipes;
    std::vector<pid_t> kids;
    for (int t = 0; t < 8; ++t) {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(fds[0]);
            std::string note;
            const std::string dir = first_private_state_dir({shm.path, tmp.path}, &note, {});
            const std::string line = dir.empty() ? "none: " + note : dir;
            if (::write(fds[1], line.data(), line.size()) < 0) _exit(2);
            _exit(0);
        }
        ::close(fds[1]);
        pipes.push_back(fds[0]);
        kids.push_back(pid);
    }
    for (size_t i = 0; i < kids.size(); ++i) {
        std::string got;
        char buf[512];
        ssize_t n;
        while ((n = ::read(pipes[i], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
        ::close(pipes[i]);
        int st = 0;
        ::waitpid(kids[i], &st, 0);
        results.push_back(got);
    }
    INFO(results[0]);
    REQUIRE(results[0].rfind(shm.path + "/gputopo-launch." + uid + ".", 0) == 0);  // in the first base
    for (const std::string& r : results) CHECK(r == results[0]);
    struct stat st {};
    REQUIRE(::lstat(results[0].c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK(st.st_uid == ::geteuid());
    CHECK((st.st_mode & 0777) == 0700);
    // The losers of the race removed theirs: ours is the only fresh directory of this user's.
    std::vector<std::string> mine;
    for (const std::string& d : fresh_dirs(shm.path))
        if (::lstat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0)
            mine.push_back(d);
    CHECK(mine == std::vector<std::string>{results[0]});
    // A later step reuses it at once.
    std::string note;
    CHECK(first_private_state_dir({shm.path, tmp.path}, &note, {}) == results[0]);
    // The private runtime directory comes first when this user has one (0700, owned), never when open to others.
    TempDir runtime;
    CHECK(first_private_state_dir({shm.path, tmp.path}, &note, {runtime.path}) == runtime.path + "/gputopo-launch");
    TempDir open_runtime;
    REQUIRE(::chmod(open_runtime.path.c_str(), 0755) == 0);
    CHECK(first_private_state_dir({shm.path, tmp.path}, &note, {open_runtime.path}) == results[0]);
}

namespace {

// A fake Slurm: the output of each command by its first words, and the commands run.
struct FakeSlurm {
    std::string show_job = "JobId=7 JobName=x UserId=u(1) Requeue=1 Restarts=0 BatchFlag=1 WorkDir=/w";
    gputopo::launch::CommandResult sacct{1, "sacct: error: Slurm accounting storage is disabled\n"};
    gputopo::launch::CommandResult script{0, "#!/bin/bash\nsrun true\n"};
    std::vector<std::string> ran;
    gputopo::launch::SlurmCommand runner() {
        return [this](const std::vector<std::string>& argv, double) -> gputopo::launch::CommandResult {
            ran.push_back(argv.at(0) + " " + argv.at(1));
            if (argv.at(0) == "sacct") return sacct;
            if (argv.at(1) == "write") return script;
            return {0, show_job + "\n"};
        };
    }
};

gputopo::launch::Getenv env_with(std::map<std::string, std::string> vars) {
    return [vars](const std::string& n) -> std::optional<std::string> {
        auto it = vars.find(n);
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
}

}  // namespace

TEST_CASE("requeue asked: sbatch's arguments, the SubmitLine, #SBATCH lines", "[launcher][requeue_asked]") {
    using namespace gputopo::launch;
    using V = std::vector<std::string>;
    CHECK(requeue_in_sbatch_args({"--requeue", "job.sh"}) == std::optional<bool>(true));
    CHECK(requeue_in_sbatch_args({"-N", "2", "--requeue", "-t", "5", "job.sh"}) == std::optional<bool>(true));
    CHECK(requeue_in_sbatch_args({"--requeue", "--no-requeue", "job.sh"}) == std::optional<bool>(false));
    CHECK_FALSE(requeue_in_sbatch_args({"-N2", "job.sh", "--requeue"}));           // the script's own argument
    CHECK_FALSE(requeue_in_sbatch_args({"-J", "--requeue", "job.sh"}));            // a job named "--requeue"
    CHECK_FALSE(requeue_in_sbatch_args({"--job-name", "--requeue", "job.sh"}));
    CHECK(requeue_in_sbatch_args({"--hold", "--requeue", "--wrap", "srun x"}) == std::optional<bool>(true));
    CHECK(requeue_in_sbatch_args({"-vH", "--requeue", "job.sh"}) == std::optional<bool>(true));
    CHECK_FALSE(requeue_in_sbatch_args(V{}));
    CHECK(submit_line_of("JobId=7 JobName=a Command=/j.sh SubmitLine=sbatch --requeue -J x /j.sh WorkDir=/w") ==
          "sbatch --requeue -J x /j.sh");
    CHECK(submit_line_of("JobId=7 JobName=a WorkDir=/w").empty());
    CHECK(requeue_in_script("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --requeue # retry\n\n  # note\nsrun x\n") ==
          std::optional<bool>(true));
    CHECK_FALSE(requeue_in_script("#!/bin/bash\nsrun x\n#SBATCH --requeue\n"));  // after the first command: ignored
    CHECK(requeue_in_script("#SBATCH --requeue\n#SBATCH --no-requeue\n") == std::optional<bool>(false));
    CHECK_FALSE(requeue_in_script("#SBATCH -J --requeue\n"));
    CHECK_FALSE(requeue_in_script("# SBATCH --requeue\n"));  // not a directive
}

TEST_CASE("requeue asked: any source that says so; what was read when none does", "[launcher][requeue_asked]") {
    using namespace gputopo::launch;
    JobInfo info;
    info.known = info.batch = info.requeue_allowed = true;
    const Getenv none = env_with({});
    {  // gputopo's job_submit.lua: no command at all.
        FakeSlurm s;
        info.comment = "mine gputopo:requeue=asked";
        RequeueAsked r = requeue_asked("7", info, none, "1", s.runner());
        CHECK(r.asked);
        CHECK_THAT(r.by, Catch::Contains("Comment"));
        CHECK(s.ran.empty());
        info.comment = "";
    }
    {  // The SubmitLine (Slurm 25.11+ scontrol).
        FakeSlurm s;
        s.show_job = "JobId=7 JobName=x SubmitLine=sbatch -N1 --requeue job.sh WorkDir=/w";
        RequeueAsked r = requeue_asked("7", info, none, "1", s.runner());
        CHECK(r.asked);
        CHECK_THAT(r.by, Catch::Contains("SubmitLine"));
    }
    {  // The SubmitLine from sacct (accounting), older scontrol.
        FakeSlurm s;
        s.sacct = {0, "/usr/bin/sbatch --requeue job.sh\n"};
        CHECK(requeue_asked("7", info, none, "1", s.runner()).asked);
    }
    {  // SBATCH_REQUEUE in the batch environment.
        FakeSlurm s;
        RequeueAsked r = requeue_asked("7", info, env_with({{"SBATCH_REQUEUE", "1"}}), "1", s.runner());
        CHECK(r.asked);
        CHECK_THAT(r.by, Catch::Contains("SBATCH_REQUEUE"));
    }
    {  // #SBATCH --requeue in the script.
        FakeSlurm s;
        s.script = {0, "#!/bin/bash\n#SBATCH --requeue\nsrun x\n"};
        RequeueAsked r = requeue_asked("7", info, none, "1", s.runner());
        CHECK(r.asked);
        CHECK_THAT(r.by, Catch::Contains("#SBATCH --requeue"));
    }
    {  // #SBATCH --no-requeue, yet Requeue=1: the command line overrode it.
        FakeSlurm s;
        s.script = {0, "#!/bin/bash\n#SBATCH --no-requeue\nsrun x\n"};
        CHECK(requeue_asked("7", info, none, "1", s.runner()).asked);
    }
    {  // Nothing asked: every source named, and what the site can install.
        FakeSlurm s;
        RequeueAsked r = requeue_asked("7", info, none, "1", s.runner());
        CHECK_FALSE(r.asked);
        const std::string e = r.explain();
        CHECK_THAT(e, Catch::Contains("Comment") && Catch::Contains("SubmitLine: not readable") &&
                          Catch::Contains("accounting storage is disabled") && Catch::Contains("SBATCH_REQUEUE: unset") &&
                          Catch::Contains("#SBATCH lines: neither") && Catch::Contains("job_submit.lua") &&
                          Catch::Contains("sacct"));
        // and the requeue decision says it
        Options o;
        RequeueInputs in;
        in.in_batch_job = in.requeue_allowed = true;
        in.asked_sources = e;
        Classification g;
        g.cls = FailureClass::GpuFault;
        g.evidence = "Xid 79";
        CHECK_THAT(decide_requeue(g, o, in).message, Catch::Contains("did not ask") && Catch::Contains(e));
    }
    {  // The script unreadable: said so.
        FakeSlurm s;
        s.script = {1, "scontrol: error: job script retrieval failed: Access/permission denied\n"};
        CHECK_THAT(requeue_asked("7", info, none, "1", s.runner()).explain(),
                   Catch::Contains("batch script: not readable") && Catch::Contains("permission denied"));
    }
    {  // Requeue=0: nothing read, nothing run.
        FakeSlurm s;
        info.requeue_allowed = false;
        info.comment = "gputopo:requeue=asked";
        RequeueAsked r = requeue_asked("7", info, none, "1", s.runner());
        CHECK_FALSE(r.asked);
        CHECK(s.ran.empty());
        CHECK_THAT(r.explain(), Catch::Contains("Requeue=0"));
    }
}
