// The launcher's event loop: runs the program, relays its stderr (keeping a
// tail), forwards signals to its process group, runs checkpoint hooks on
// their triggers with deadlines, and reports how the program ended.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "launcher/failure/classify.hpp"
#include "launcher/failure/events.hpp"
#include "launcher/child/hooks.hpp"
#include "launcher/options/options.hpp"

namespace gputopo::launch {

struct SuperviseContext {
    int rank = 0;
    int local_rank = 0;
    int nodes = 1;
    std::string job_id;
    double job_end_time = -1;          // unix seconds, -1 unknown (asked lazily)
    std::function<double()> end_time_query;   // asked when a deadline needs it; may be empty
    std::function<double()> kill_wait_query;  // KillWait; may be empty
    // Slurm signals every process of the step itself (proctrack cgroup or
    // linuxproc): signals from our parent (slurmstepd) are not forwarded again.
    bool slurm_signals_all = false;
    EventLog* log = nullptr;
};

struct SuperviseResult {
    ChildEnd end;
    bool started = false;
    std::string error;                 // the program could not be started
    int hooks_run = 0;
    int hooks_late = 0;                // hooks reported as not finishing in time
};

SuperviseResult supervise(const Options& opt, const SuperviseContext& ctx);

// True when any checkpoint hook is configured.
bool hooks_configured(const Options& opt);
// The checkpoint signal in effect (SIGUSR2 when a hook is asked for and no
// signal was given, 0 when none).
int effective_checkpoint_signal(const Options& opt);

// poll()'s timeout for a timer `wait_s` seconds away: -1 (none) for a
// negative wait, else rounded up and capped at one hour (a timer weeks away
// must not overflow int into a negative, i.e. endless, timeout; the loop
// simply wakes once an hour and looks again).
int poll_timeout_ms(double wait_s);

}  // namespace gputopo::launch
