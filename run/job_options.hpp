// `gputopo run` options: the job-level supervisor's command line (cli/cmd_run.cpp
// is the front end; run/job_run.hpp does the work).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "run/slow_nodes.hpp"

namespace gputopo::launch::job {

struct JobOptions {
    int spares = 0;                // --spares N: nodes kept idle for replacement
    int max_restarts = 3;          // --max-restarts M: in-job restarts
    int min_nodes = 0;             // --min-nodes K: shrink down to K nodes when no spare is left (0: never)
    double hang_timeout_s = 0;     // --hang-timeout S: a rank silent that long is hung (0: off)
    double startup_timeout_s = 0;  // --startup-timeout S: a rank before its first step (0: max(600 s, --hang-timeout))
    std::string heartbeat;         // --heartbeat FILE: per-rank pattern (%r = rank); default STATE/heartbeat.%r
    std::string state_dir;         // --state-dir DIR: shared between the nodes; default ./gputopo-run.JOBID
    std::string log_dir;           // --log DIR: the JSON event log; default the state dir
    std::string islands;           // --islands FILE: gputopo.conf island file (as gputopo-launch --islands)
    int tasks_per_node = 0;        // --ntasks-per-node T; 0: SLURM_NTASKS_PER_NODE, else 1
    double kill_timeout_s = 30;    // --kill-timeout S: bound on srun ending once the step is to end
    double start_timeout_s = 60;   // --start-timeout S: bound on a step Slurm is slow to create
    std::string spare_check;       // --spare-check CMD: run on a spare (srun, sh -c) before it is used; "" state only
    double spare_check_timeout_s = 60;  // --spare-check-timeout S: bound on one check
    double checkpoint_cost_s = 10; // --checkpoint-cost S: C in the waste model (what the program stalls for)
    double checkpoint_persist_s = 0;  // --checkpoint-persist S: an asynchronous checkpoint is durable S after its stall (0: blocking)
    double mtbf_per_node_s = 6000.0 * 3600;  // --mtbf-per-node DURATION: M per node in the waste model
    SlowPolicy slow;               // --slow-nodes, --slow-fraction, --slow-windows, --slow-window (slow_nodes.hpp)
    std::vector<std::string> srun_args;      // --srun-arg ARG (repeatable): passed to srun before the program
    std::vector<std::string> command;        // after "--"
    bool help = false;
};

struct JobUsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws JobUsageError naming the option and what was expected.
JobOptions parse_job_options(const std::vector<std::string>& args);

// The --help text.
std::string job_usage();

// Every option, for the man-page test.
std::vector<std::string> job_option_names();

}  // namespace gputopo::launch::job
