// The few Slurm commands the launcher runs (scontrol), run without a shell,
// with a time limit, and the parsers for their output (pure, tested on text).
#pragma once

#include <string>
#include <vector>

namespace gputopo::launch {

struct CommandResult {
    int status = -1;      // exit code; -1 could not run / killed / timed out
    std::string output;   // stdout and stderr together
};

// What a command run by the launcher does with the signals Slurm sends a
// step that ends (SIGTERM, SIGINT, SIGHUP).
enum class Signals {
    Default,   // they end it (the user's --preflight command)
    Shielded,  // blocked: a Slurm query or RPC (scontrol requeue among them)
               // finishes even when its own request makes Slurm end the step;
               // its timeout (and Slurm's SIGKILL after KillWait) bound it
};

// Runs argv[0] (PATH lookup) with stdin from /dev/null; kills it after timeout_s.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s, Signals sig = Signals::Shielded);


// "2026-11-30T08:10:00" in local time -> unix seconds; -1 for Unknown/None/bad.
double parse_slurm_time(const std::string& text);

// "KillWait                = 30 sec" in `scontrol show config` -> 30; -1 if absent.
double parse_kill_wait(const std::string& show_config);

struct JobInfo {
    bool known = false;
    bool batch = false;
    bool requeue_allowed = false;
    int restarts = 0;
    double end_time = -1;
    std::string comment;
    std::string state;
};
// The job record is read with squeue, one field per '|', the only free text
// (Comment, which the user sets) last, so no user string can pose as another
// field (`scontrol show job -o` puts JobName first and its values have no
// delimiter). squeue_job_argv(ID) is the command; parse_squeue_job(OUTPUT)
// reads "JOBID|BATCHFLAG|REQUEUE|RESTARTCNT|ENDTIME|STATE|COMMENT|\n".
// Pure, never throws: anything that is not such a line gives known = false.
std::vector<std::string> squeue_job_argv(const std::string& job_id);
JobInfo parse_squeue_job(const std::string& output);

// The value of `key` (case-insensitive) in slurm.conf text; "" if absent.
std::string slurm_conf_value(const std::string& conf_text, const std::string& key);
// The value of `key` in the slurm.conf this task sees (SLURM_CONF, else
// /etc/slurm/slurm.conf); "" when absent or unreadable.
std::string local_conf_value(const char* key);
// ProctrackType from the slurm.conf this task sees (SLURM_CONF, else
// /etc/slurm/slurm.conf); a file read, no RPC. "" unknown.
std::string local_proctrack_type();
// True when Slurm signals every process of a step (proctrack/linuxproc), so the
// program gets Slurm's signals directly. proctrack/cgroup signals only the
// task's own process (the launcher), except SIGKILL.
bool proctrack_signals_all(const std::string& proctrack_type);
// KillWait (seconds) from the same slurm.conf; -1 unknown.
double local_kill_wait();

// Live queries (scontrol). Unknown on any failure.
JobInfo query_job(const std::string& job_id);
double query_kill_wait();

}  // namespace gputopo::launch
