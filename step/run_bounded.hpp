// A command run with a time bound: fork/exec, stdin /dev/null, stdout and
// stderr captured (at most 1 MiB), SIGKILL after the timeout. The runner the
// plugin and the launcher give step::resolve_master_addr (its CommandRunner),
// and the launcher's scontrol calls (launcher/requeue/slurm_ctl).
#pragma once

#include <signal.h>

#include <string>
#include <utility>
#include <vector>

namespace gputopo::step {

// {exit status, output}; status -1 when the command could not run, was
// killed at `timeout_s` or ended by a signal. `blocked`: the signals the child
// starts with blocked (nullptr: none).
std::pair<int, std::string> run_bounded(const std::vector<std::string>& argv, double timeout_s,
                                        const sigset_t* blocked = nullptr);

}  // namespace gputopo::step
