#include "launcher/requeue/requeue_asked.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "launcher/failure/root_cause.hpp"
#include "topo/core/env_names.hpp"

namespace gputopo::launch {

namespace {

// sbatch's long options that take no value, or one only after '=' (22.05-26.05).
const char* const kLongFlags[] = {"contiguous", "exclusive", "get-user-env", "help", "hold", "ignore-pbs", "no-kill",
                                  "no-requeue", "nice", "overcommit", "oversubscribe", "parsable", "propagate", "quiet",
                                  "reboot", "requeue", "spread-job", "test-only", "usage", "use-min-nodes", "verbose",
                                  "version", "wait"};
// Its short options without a separate value.
const std::string kShortFlags = "hHIkOQsuvVW";

bool long_flag(const std::string& name) {
    return std::find(std::begin(kLongFlags), std::end(kLongFlags), name) != std::end(kLongFlags);
}

std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string w;
    while (in >> w) out.push_back(w);
    return out;
}

std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    if (line.size() > 200) line = line.substr(0, 200) + "...";
    return line.empty() ? "no output" : line;
}

const char* said(bool asked) { return asked ? "--requeue" : "--no-requeue"; }

}  // namespace

std::optional<bool> requeue_in_sbatch_args(const std::vector<std::string>& args) {
    std::optional<bool> v;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") break;
        if (a.rfind("--", 0) == 0) {
            const size_t eq = a.find('=');
            const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
            if (name == "requeue") v = true;  // --requeue, --requeue=expedite (25.11)
            if (name == "no-requeue" && eq == std::string::npos) v = false;
            if (eq == std::string::npos && !long_flag(name)) ++i;  // its value
            continue;
        }
        if (a.size() < 2 || a[0] != '-') break;  // the script: what follows is its own
        for (size_t k = 1; k < a.size(); ++k) {
            if (kShortFlags.find(a[k]) != std::string::npos) continue;
            if (k + 1 == a.size()) ++i;  // "-N 2": the value is the next word
            break;                       // "-N2": the rest is the value
        }
    }
    return v;
}

std::string submit_line_of(const std::string& show_job) {
    // One line (-o); SubmitLine runs up to WorkDir=, which always follows it.
    const std::string key = " SubmitLine=";
    size_t at = show_job.find(key);
    if (at == std::string::npos) return "";
    at += key.size();
    size_t end = show_job.find(" WorkDir=", at);
    if (end == std::string::npos) end = show_job.find('\n', at);
    return show_job.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::optional<bool> requeue_in_script(const std::string& script) {
    std::optional<bool> v;
    std::istringstream in(script);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("#SBATCH", 0) == 0) {
            std::vector<std::string> args;
            for (const std::string& w : words(line.substr(7))) {
                if (w[0] == '#') break;  // a comment after the directive
                args.push_back(w);
            }
            if (auto x = requeue_in_sbatch_args(args)) v = x;
            continue;
        }
        const size_t c = line.find_first_not_of(" \t\r");
        if (c != std::string::npos && line[c] != '#') break;  // the first command ends the directives
    }
    return v;
}

std::string RequeueAsked::explain() const {
    std::string out = "read: ";
    for (size_t i = 0; i < read.size(); ++i) out += (i ? "; " : "") + read[i];
    return out +
           ". Submit with #SBATCH --requeue in the script (read on every site), or give gputopo-launch --requeue yes; "
           "a site can install gputopo's job_submit.lua (or its requeue lines in its own), which records "
           "sbatch --requeue in the Comment, or slurmdbd accounting, where sacct keeps the SubmitLine";
}

RequeueAsked requeue_asked(const std::string& job_id, const JobInfo& info, const Getenv& env,
                           const std::string& job_requeue_conf, const SlurmCommand& run) {
    RequeueAsked r;
    auto decide = [&](bool asked, const std::string& by) {
        r.asked = asked;
        r.by = by;
        return r;
    };
    if (!info.requeue_allowed) {
        r.read.push_back("the job's Requeue=0: Slurm will not requeue it (submitted with --no-requeue, or "
                         "JobRequeue=0 and no --requeue)");
        return r;
    }
    // 1. The Comment (gputopo's job_submit.lua), or JobRequeue=0.
    if (comment_asks_requeue(info.comment))
        return decide(true, "the job's Comment (gputopo:requeue=asked, from gputopo's job_submit.lua)");
    if (job_asked_requeue(info.comment, true, job_requeue_conf))
        return decide(true, "Requeue=1 on a cluster whose JobRequeue=0");
    r.read.push_back("the Comment: no gputopo:requeue=asked (written by gputopo's job_submit.lua where installed)");
    // 2. The SubmitLine.
    std::string line, why;
    if (!job_id.empty()) {
        CommandResult s = run({"scontrol", "show", "job", "-o", job_id}, 15);
        if (s.status == 0) line = submit_line_of(s.output);
        if (line.empty()) {
            CommandResult a = run({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", "SubmitLine"}, 15);
            std::string out = a.output.substr(0, a.output.find('\n'));  // argv[0] may be a path to sbatch
            if (a.status == 0 && !out.empty() && out.find("sbatch") != std::string::npos) line = out;
            else why = "sacct: " + (a.status == 0 ? std::string("no SubmitLine") : first_line(a.output));
        }
    }
    if (!line.empty()) {
        std::vector<std::string> argv = words(line);
        if (!argv.empty()) argv.erase(argv.begin());  // "sbatch"
        if (auto v = requeue_in_sbatch_args(argv)) return decide(*v, std::string("the SubmitLine's ") + said(*v));
        r.read.push_back("the SubmitLine: neither --requeue nor --no-requeue");
    } else {
        r.read.push_back("the SubmitLine: not readable (scontrol show job shows it from Slurm 25.11; " +
                         (why.empty() ? std::string("no job id") : why) + ")");
    }
    // 3. The environment sbatch read its options from.
    std::optional<bool> from_env;
    if (env(env::kSbatchNoRequeue)) from_env = false;
    if (env(env::kSbatchRequeue)) from_env = true;
    if (from_env && *from_env) return decide(true, std::string(env::kSbatchRequeue) + " in the job's environment");
    r.read.push_back(std::string(env::kSbatchRequeue) + ": " + (from_env ? std::string(env::kSbatchNoRequeue) + " set" : "unset"));
    // 4. The batch script's #SBATCH lines.
    std::optional<bool> in_script;
    if (!job_id.empty()) {
        CommandResult s = run({"scontrol", "write", "batch_script", job_id, "-"}, 15);
        if (s.status == 0) {
            in_script = requeue_in_script(s.output);
            if (in_script && *in_script) return decide(true, "#SBATCH --requeue in the batch script");
            r.read.push_back(std::string("the batch script's #SBATCH lines: ") +
                             (in_script ? "--no-requeue" : "neither --requeue nor --no-requeue"));
        } else {
            r.read.push_back("the batch script: not readable (scontrol write batch_script: " + first_line(s.output) + ")");
        }
    }
    // Requeue=1 although the environment or the script said --no-requeue: only
    // the command line (or the environment over the script) can have set it.
    if (from_env)
        return decide(true, std::string(env::kSbatchNoRequeue) + " was overridden: Requeue=1 means the command line asked");
    if (in_script)
        return decide(true, "#SBATCH --no-requeue was overridden: Requeue=1 means the command line asked");
    return r;
}

RequeueAsked requeue_asked(const std::string& job_id, const JobInfo& info, const Getenv& env) {
    return requeue_asked(job_id, info, env, local_conf_value("JobRequeue"),
                         [](const std::vector<std::string>& argv, double timeout_s) { return run_command(argv, timeout_s); });
}

}  // namespace gputopo::launch
