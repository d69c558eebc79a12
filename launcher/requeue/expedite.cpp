#include "launcher/requeue/expedite.hpp"

#include <cstdio>
#include <sstream>

namespace gputopo::launch {

namespace {

// The keys Slurm prints on its job-flags line (src/scontrol/info_job.c,
// "Line 38"), each as Key=Yes or Key=No.
bool flag_word(const std::string& w) {
    static const char* const keys[] = {"GresAllowTaskSharing", "GresEnforceBind", "GresOneTaskPerSharing",
                                       "KillOnInvalidDependent", "SpreadJob", "ExpeditedRequeue"};
    const size_t eq = w.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    if (value != "Yes" && value != "No") return false;
    for (const char* k : keys)
        if (key == k) return true;
    return false;
}

std::string first_line(const std::string& text) {
    std::string line = text.substr(0, text.find('\n'));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (line.size() > 200) line = line.substr(0, 200) + "...";
    return line.empty() ? "no output" : line;
}

}  // namespace

bool expedited_in_show_job(const std::string& show_job) {
    std::istringstream in(show_job);
    std::string line;
    while (std::getline(in, line)) {
        // Slurm indents every line after the first by three spaces.
        if (line.rfind("   ", 0) != 0) continue;
        std::istringstream words(line);
        std::string w;
        bool all_flags = true, expedited = false;
        while (words >> w) {
            if (!flag_word(w)) {
                all_flags = false;
                break;
            }
            if (w == "ExpeditedRequeue=Yes") expedited = true;
        }
        if (all_flags && expedited) return true;
    }
    return false;
}

bool requeued_since(const JobInfo& now, int restart_count) {
    return now.known && restart_count >= 0 && now.restarts > restart_count;
}

FinalEnd settle_final_end(const std::string& job_id, int restart_count, const std::string& why,
                          const SlurmCommand& run) {
    FinalEnd f;
    if (job_id.empty()) return f;
    const CommandResult show = run({"scontrol", "show", "job", job_id}, 15);
    if (show.status != 0 || !expedited_in_show_job(show.output)) return f;
    f.expedited = true;
    const CommandResult q = run(squeue_job_argv(job_id), 15);
    const JobInfo info = q.status == 0 ? parse_squeue_job(q.output) : JobInfo{};
    if (!info.known) {
        f.message = "gputopo: the job asked --requeue=expedite and this end (" + why +
                    ") is final, but its record could not be read (squeue): Slurm may requeue it and hold it "
                    "(REQUEUE_HOLD); release or cancel it with scontrol release/scancel " + job_id;
        return f;
    }
    if (requeued_since(info, restart_count)) {
        f.message = "gputopo: the job was already requeued (restart " + std::to_string(info.restarts) +
                    "); this attempt's end (" + why + ") leaves it as it is";
        return f;
    }
    if (!info.requeue_allowed) return f;  // Requeue=0 already: Slurm will not requeue it
    const CommandResult u = run({"scontrol", "update", "JobId=" + job_id, "Requeue=0"}, 15);
    if (u.status == 0) {
        f.requeue_cleared = true;
        f.message = "gputopo: " + why + " ends the job for good; it asked --requeue=expedite, so its Requeue is "
                    "set to 0 (Slurm's expedited requeue would requeue a nonzero exit and hold it, REQUEUE_HOLD)";
    } else {
        f.message = "gputopo: " + why + " ends the job for good, but scontrol update JobId=" + job_id +
                    " Requeue=0 failed (" + first_line(u.output) +
                    "): Slurm's expedited requeue may requeue it and hold it (REQUEUE_HOLD)";
    }
    return f;
}

FinalEnd settle_final_end(const std::string& job_id, int restart_count, const std::string& why, EventLog& log) {
    FinalEnd f = settle_final_end(job_id, restart_count, why, [](const std::vector<std::string>& argv, double timeout_s) {
        return run_command(argv, timeout_s);
    });
    if (f.message.empty()) return f;
    std::fprintf(stderr, "%s\n", f.message.c_str());
    log.write(Event("final_end").add("expedited", f.expedited).add("requeue_cleared", f.requeue_cleared)
                  .add("message", f.message));
    return f;
}

}  // namespace gputopo::launch
