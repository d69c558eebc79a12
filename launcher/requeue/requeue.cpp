#include "launcher/requeue/requeue.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <sstream>

#include "launcher/requeue/slurm_ctl.hpp"
#include "topo/core/strings.hpp"

namespace gputopo::launch {

const char* requeue_action_name(RequeueAction a) {
    switch (a) {
        case RequeueAction::None: return "none";
        case RequeueAction::Requeue: return "requeue";
        case RequeueAction::BudgetExhausted: return "budget_exhausted";
        case RequeueAction::NotAllowed: return "not_allowed";
    }
    return "none";
}

bool retryable(FailureClass cls, const Options& o) {
    std::string name = failure_class_name(cls);
    return std::find(o.requeue_on.begin(), o.requeue_on.end(), name) != o.requeue_on.end();
}

RequeueDecision decide_requeue(const Classification& c, const Options& o, const RequeueInputs& in) {
    RequeueDecision d;
    std::string what = std::string(failure_class_name(c.cls)) + " (" + c.evidence + ")";
    if (c.cls == FailureClass::Success) return d;
    if (!retryable(c.cls, o)) {
        d.message = "gputopo: " + what + " is not retryable; not requeueing";
        return d;
    }
    if (!o.requeue) {
        d.action = RequeueAction::NotAllowed;
        d.message = "gputopo: " + what + " is retryable, but requeue is off (--no-requeue)";
        return d;
    }
    if (!in.in_batch_job || !in.requeue_allowed) {
        d.action = RequeueAction::NotAllowed;
        d.message = "gputopo: " + what + " is retryable, but the job cannot be requeued (" +
                    (!in.in_batch_job ? std::string("not a batch job") : std::string("submitted without --requeue")) + ")";
        return d;
    }
    if (!in.requeue_asked && !o.requeue_explicit) {
        d.action = RequeueAction::NotAllowed;
        d.message = "gputopo: " + what +
                    " is retryable, but the job did not ask for a requeue (submit with sbatch --requeue, or give "
                    "gputopo-launch --requeue yes; Slurm's JobRequeue=1 default alone does not count)";
        return d;
    }
    if (in.restart_count >= o.max_restarts) {
        d.action = RequeueAction::BudgetExhausted;
        d.message = "gputopo: " + what + "; restart budget exhausted (" + std::to_string(in.restart_count) + " of " +
                    std::to_string(o.max_restarts) + " restarts used, --max-restarts " + std::to_string(o.max_restarts) +
                    "); not requeueing, the job ends here";
        return d;
    }
    d.action = RequeueAction::Requeue;
    if (c.local && !in.node.empty()) d.exclude_node = in.node;
    if (o.backoff_s > 0) d.backoff_s = o.backoff_s * std::pow(2.0, std::min(in.restart_count, 20));
    std::ostringstream m;
    m << "gputopo: " << what << "; requeueing (restart " << (in.restart_count + 1) << " of " << o.max_restarts << ")";
    if (!d.exclude_node.empty()) m << ", keeping node " << d.exclude_node << " out of the next attempt";
    if (d.backoff_s > 0) m << ", back-off " << d.backoff_s << " s";
    d.message = m.str();
    return d;
}

namespace {
const char* kTag = "gputopo:exclude=";

// Where each "gputopo:exclude=..." record in the comment starts and ends (a
// record runs to the next white space). Every one counts: a comment can hold
// several (a user's copy, an older launcher's), and none may be lost.
std::vector<std::pair<size_t, size_t>> record_spans(const std::string& comment) {
    std::vector<std::pair<size_t, size_t>> out;
    size_t pos = 0;
    while ((pos = comment.find(kTag, pos)) != std::string::npos) {
        size_t end = comment.find_first_of(" \t\r\n", pos);
        if (end == std::string::npos) end = comment.size();
        out.emplace_back(pos, end);
        pos = end;
    }
    return out;
}
}  // namespace

ExclusionRecord parse_exclusion_record(const std::string& comment) {
    ExclusionRecord r;
    for (const auto& span : record_spans(comment)) {
        for (const auto& part : split_nonempty(comment.substr(span.first, span.second - span.first), ';')) {
            if (part.rfind(kTag, 0) == 0) {
                for (const auto& n : split_nonempty(part.substr(std::string(kTag).size()), ','))
                    if (std::find(r.nodes.begin(), r.nodes.end(), n) == r.nodes.end()) r.nodes.push_back(n);
            } else if (part.rfind("backoff=", 0) == 0) {
                char* end = nullptr;
                double v = std::strtod(part.c_str() + 8, &end);
                if (end && *end == '\0' && std::isfinite(v) && v > 0) r.backoff_s = v;
            }
        }
    }
    return r;
}

std::string merge_exclusion_record(const std::string& comment, const std::string& node, double backoff_s) {
    ExclusionRecord r = parse_exclusion_record(comment);
    if (!node.empty() && std::find(r.nodes.begin(), r.nodes.end(), node) == r.nodes.end()) r.nodes.push_back(node);
    // The comment without any old record, then one record with all nodes.
    std::string rest = comment;
    auto spans = record_spans(comment);
    for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        size_t end = it->second;
        if (end < rest.size() && rest[end] == ' ') ++end;
        rest.erase(it->first, end - it->first);
    }
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.pop_back();
    std::string rec = kTag;
    for (size_t i = 0; i < r.nodes.size(); ++i) rec += (i ? "," : "") + r.nodes[i];
    if (backoff_s > 0) rec += ";backoff=" + std::to_string(static_cast<long long>(std::llround(std::min(backoff_s, 1e9))));
    return rest.empty() ? rec : rest + " " + rec;
}

std::string private_state_dir(const std::string& base) {
    if (base.empty()) return "";
    std::string dir = base + "/gputopo-launch." + std::to_string(static_cast<unsigned long>(::geteuid()));
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
    // Another user may have made it first (the name is predictable): use it
    // only when it is a directory, not a link, ours, and no one else's to write.
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return "";
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
    ::close(fd);
    return ok ? dir : "";
}

std::string node_state_base(const std::string& option, const std::string& node, const std::string& tmpdir) {
    if (!option.empty()) {
        std::string out;
        for (size_t i = 0; i < option.size(); ++i) {
            if (option[i] == '%' && i + 1 < option.size() && option[i + 1] == 'n') {
                out += node;
                ++i;
            } else {
                out += option[i];
            }
        }
        return out;
    }
    if (::access("/dev/shm", W_OK) == 0) return "/dev/shm";
    return tmpdir.empty() ? "/tmp" : tmpdir;
}

void sweep_stale_claims(const std::string& dir, double stale_after_s) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    const time_t now = ::time(nullptr);
    int seen = 0;
    while (dirent* e = ::readdir(d)) {
        if (++seen > 4096) break;  // bounded: what is left goes at the next claim
        std::string name = e->d_name;
        if (name.rfind("gputopo-launch.", 0) != 0 || name.size() < 7 || name.compare(name.size() - 7, 7, ".leader") != 0)
            continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            static_cast<double>(now - st.st_mtime) > stale_after_s)
            ::unlinkat(::dirfd(d), name.c_str(), 0);
    }
    ::closedir(d);
}

void release_claim(const std::string& dir, const std::string& key) {
    if (!dir.empty()) ::unlink((dir + "/gputopo-launch." + key + ".leader").c_str());
}

std::vector<std::string> node_state_bases(const std::string& option, const std::string& node, const std::string& tmpdir) {
    std::vector<std::string> out;
    auto add = [&](const std::string& b) {
        if (!b.empty() && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    };
    if (!option.empty()) add(node_state_base(option, node, tmpdir));
    if (::access("/dev/shm", W_OK) == 0) add("/dev/shm");
    add(tmpdir);
    add("/tmp");
    return out;
}

std::string first_private_state_dir(const std::vector<std::string>& bases, std::string* note) {
    std::string refused;
    for (const std::string& base : bases) {
        std::string dir = private_state_dir(base);
        if (!dir.empty()) return dir;
        refused += (refused.empty() ? "" : ", ") + base + "/gputopo-launch." + std::to_string(static_cast<unsigned long>(::geteuid()));
    }
    if (note)
        *note = "no private directory of this user (" + refused +
                ": each missing and not creatable, a link, another user's or open to others)";
    return "";
}

std::string node_private_dir(const std::string& option, const std::string& node, const std::string& tmpdir,
                             std::string* note) {
    return first_private_state_dir(node_state_bases(option, node, tmpdir), note);
}

bool claim_leadership(const std::string& dir, const std::string& key, double stale_after_s) {
    if (dir.empty()) return true;  // no safe place: slurmctld arbitrates
    sweep_stale_claims(dir, stale_after_s);
    std::string path = dir + "/gputopo-launch." + key + ".leader";
    for (int attempt = 0; attempt < 2; ++attempt) {
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::close(fd);
            return true;
        }
        if (errno != EEXIST) return true;  // unusable dir: slurmctld arbitrates
        // A claim from long ago is another job's (job ids are reused across
        // clusters and after a controller's state is reset): take it over.
        struct stat st {};
        if (attempt == 0 && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            static_cast<double>(::time(nullptr) - st.st_mtime) > stale_after_s)
            ::unlink(path.c_str());
        else
            return false;
    }
    return false;
}

RequeueResult perform_requeue(const std::string& job_id, const RequeueDecision& d) {
    RequeueResult res;
    if (!d.exclude_node.empty() || d.backoff_s > 0) {
        JobInfo info = query_job(job_id);
        if (!info.known) {
            // Without the job's record the comment is unknown: writing one
            // would replace the user's text (issue 20, H9).
            res.message = "gputopo: could not read job " + job_id +
                          "'s record (squeue gave no single job line); the node to exclude is not recorded";
        } else {
            std::string comment = merge_exclusion_record(info.comment, d.exclude_node, d.backoff_s);
            CommandResult u = run_command({"scontrol", "update", "JobId=" + job_id, "Comment=" + comment}, 15);
            if (u.status != 0)
                res.message = "gputopo: could not record the node to exclude in the job's Comment (" + u.output + ")";
        }
    }
    // Large sites raise MessageTimeout (30-60 s); a controller that slow still
    // requeues, so the launcher waits as long as such a controller may take.
    CommandResult r = run_command({"scontrol", "requeue", job_id}, 60);
    if (r.status == 0) {
        res.requeued = true;
        return res;
    }
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (out.find("pending") != std::string::npos || out.find("completing") != std::string::npos ||
        out.find("Requested operation is presently disabled") != std::string::npos) {
        res.lost_race = true;
        return res;
    }
    // No answer (scontrol timed out or was killed): the request may still have
    // reached slurmctld. Whether the job was requeued is then read from Slurm.
    if (out.empty()) {
        JobInfo after = query_job(job_id);
        if (after.known && (after.state.find("REQUEUE") != std::string::npos || after.state == "PENDING")) {
            res.requeued = true;
            return res;
        }
    }
    res.message = "gputopo: scontrol requeue " + job_id + " failed: " + out;
    return res;
}

}  // namespace gputopo::launch
