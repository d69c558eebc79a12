// The program as a child in its own process group, so one kill(-pgid)
// reaches it and everything it started. Its stderr can go through a pipe the
// supervisor relays to the launcher's stderr (keeping a tail for
// classification).
#pragma once

#include <sys/types.h>

#include <signal.h>

#include <string>
#include <vector>


namespace gputopo::launch {

// The signals the launcher forwards to the program's process group.
const std::vector<int>& forwarded_signals();

// SIGTERM, SIGINT and SIGHUP: how Slurm (and a user's Ctrl-C) ends a step.
sigset_t termination_signals();

// Blocks termination_signals() in the launcher for the rest of its life.
// Once the program has ended, the launcher only classifies, asks Slurm and
// writes its log, all bounded in time; a requeue ends the step, and the
// launcher must not die halfway through recording it. Slurm's SIGKILL after
// KillWait remains the upper bound.
void shield_from_termination();

struct SpawnOptions {
    bool capture_stderr = true;
    bool capture_stdout = false;  // stdout through a pipe as well (`gputopo run`: srun --label)
    std::vector<std::pair<std::string, std::string>> extra_env;  // set in the child only
    // Start with SIGTERM and SIGINT ignored (checkpoint commands: Slurm's
    // SIGTERM to every process of the step must not cut a checkpoint short;
    // only SIGKILL at the end of KillWait does).
    bool ignore_term = false;
    // Signals the program starts with ignored (the hook trigger, so Slurm's
    // pre-timeout signal, delivered to every process, does not kill it).
    std::vector<int> ignore;
};

struct Child {
    pid_t pid = -1;
    int stderr_fd = -1;     // read end, -1 when not captured
    int stdout_fd = -1;     // read end, -1 when not captured
    std::string error;      // why it could not start ("" ok)
};

// Forks and execs argv (PATH lookup). The child gets an empty signal mask and
// default dispositions, its own process group (pgid = pid). When exec fails
// the child exits 127 (126: not executable) after one "gputopo:" line.
Child spawn_child(const std::vector<std::string>& argv, const SpawnOptions& opt);

// kill(-pgid, sig); falls back to the pid when the group is gone.
void signal_group(pid_t pgid, int sig);

}  // namespace gputopo::launch
