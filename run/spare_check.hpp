// Health of a spare before it takes over a failed node's ranks (and of every
// spare at job start): Slurm's state of the node (a DRAIN, DOWN, FAIL or
// NOT_RESPONDING spare is unusable; the site's HealthCheckProgram drains a bad
// node) and, with `gputopo run --spare-check CMD`, CMD run on the spare as a
// one-task step, bounded by --spare-check-timeout.
#pragma once

#include <string>
#include <vector>

namespace gputopo::launch::job {

// Pure: "" when the State= of `scontrol show node -o NODE` output is usable,
// else why not ("State=IDLE+DRAIN"). Output without State= is usable (unknown:
// the command check, if any, decides).
std::string unusable_state(const std::string& scontrol_node_output);

// The srun command line of CMD on NODE: one task, no other step's resources
// waited for longer than the caller's timeout (the caller kills it).
std::vector<std::string> spare_check_argv(const std::string& node, const std::string& cmd);

struct SpareVerdict {
    std::string node;
    bool ok = true;
    std::string reason;  // why not ok; "" ok
    double seconds = 0;  // the check's duration
};

// Checks every node of `nodes` at once (state first, one `scontrol show node`
// for all; a node it does not name counts as usable; then CMD where given),
// each bounded by timeout_s; a check still running then is killed and fails.
// `job_id` is used to cancel the check steps left behind. CMD "" checks the
// state only.
std::vector<SpareVerdict> check_spares(const std::vector<std::string>& nodes, const std::string& cmd,
                                       double timeout_s, const std::string& job_id);

}  // namespace gputopo::launch::job
