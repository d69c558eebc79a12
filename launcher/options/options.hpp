// gputopo-launch's options, from three places read by one parser:
//   a config file of key=value lines (--config FILE, GPUTOPO_LAUNCH_CONFIG,
//   else /etc/gputopo/gputopo-launch.conf when present), then GPUTOPO_LAUNCH_<KEY>
//   variables (key upper-cased, '-' -> '_'), then the command line
//   (--key=value or --key value). Later sources win. The same key names are
//   used everywhere: "checkpoint-every" is --checkpoint-every,
//   GPUTOPO_LAUNCH_CHECKPOINT_EVERY and `checkpoint-every = 30m`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "step/option_parser.hpp"
#include "topo/sources/nic_policy.hpp"

namespace gputopo::launch {

// --gpu-topo's default: closest.
inline step::Options default_gpu_topo() {
    step::Options o;
    o.mode = Mode::Closest;
    return o;
}

enum class HookRanks { Zero, Node, All };
const char* hook_ranks_name(HookRanks r);

struct Options {
    std::vector<std::string> command;      // after "--" (or the first non-option word)
    bool dry_run = false;
    bool verbose = false;
    bool help = false;
    bool version = false;
    std::string config_path;               // the config file read, "" none
    std::string log_dir;                   // --log DIR: JSON event lines

    // Binding when the SPANK plugin did not bind the task.
    step::Options gpu_topo = default_gpu_topo();  // --gpu-topo, parsed as srun's (step/option_parser.hpp)
    std::string topology;                  // file (%n node name, %h host name); "" live discovery
    std::string devices;                   // --devices DIR: the GPU device files a task counts (step/device_probe.hpp)
    NicPolicy nic_policy;                  // --nic-include / --nic-exclude (topo/sources/nic_policy.hpp)

    // Framework env.
    std::string rank_order = "slurm";      // slurm | island: RANK = SLURM_PROCID or GPUTOPO_RANK (launcher/ranks/island_rank.hpp)
    std::string nccl_topo_file;            // --nccl-topo-file PATH (%n node, %h host, %j job id): write and export NCCL_TOPO_FILE
    std::string islands;                   // gputopo.conf for island ranks when the plugin did not set them
    std::string layout;                    // --layout SPEC: RANK from the layout placement (topo/fabric/layout_placement.hpp)
    std::string nvlink_domain = "node";    // --nvlink-domain node|island|N for --layout
    std::string model;                     // --model SPEC for --layout (layout_traffic.hpp): weighs DP against PP
    bool island_procid = false;            // --island-procid: with --rank-order=island also SLURM_PROCID = island rank
    std::string framework = "auto";        // auto | jax (JAX: isolate gives way to JAX's own device choice)
    std::string error_file = "auto";       // TORCHELASTIC_ERROR_FILE pattern (%j %r %R); auto; none
    std::string sysroot;                   // prefix for /sys, /proc, /etc read outside Slurm (tests)
    int master_port_min = 20000;
    int master_port_max = 29999;

    // Checkpoint hooks.
    std::string checkpoint_cmd;            // run with /bin/sh -c
    int checkpoint_signal = 0;             // 0: no signal hook (default SIGUSR2 once a hook is asked for)
    bool checkpoint_signal_given = false;
    int trigger_signal = 10;               // SIGUSR1: Slurm's --signal=USR1@SECS
    HookRanks checkpoint_ranks = HookRanks::Zero;
    double checkpoint_every_s = 0;         // 0 off
    bool checkpoint_auto = false;          // Young/Daly
    double checkpoint_cost_s = 60;         // hook cost assumed until one is measured (auto)
    double mtbf_per_node_s = 6000.0 * 3600;
    double kill_wait_s = -1;               // -1: ask Slurm (scontrol show config)
    bool checkpoint_on_term = true;        // SIGTERM (time limit, preemption) triggers the hook
    // Forward Slurm's signals to the program: auto = only when Slurm does not
    // already signal every process of the step (proctrack/cgroup, linuxproc);
    // signals from anyone else are always forwarded.
    enum class Forward { Auto, Always } forward_signals = Forward::Auto;

    // Failure handling.
    std::vector<int> no_requeue_exit;      // exit codes meaning a permanent user error
    int no_requeue_code = 78;              // the reserved "do not requeue" exit code (EX_CONFIG)
    bool requeue = true;
    bool requeue_explicit = false;         // --requeue yes: requeue even when the job did not ask (sbatch --requeue)
    std::vector<std::string> requeue_on = {"gpu_fault", "node_fault"};
    int max_restarts = 3;                  // --max-restarts, else TORCHELASTIC_MAX_RESTARTS, else 3
    bool max_restarts_explicit = false;    // --max-restarts given
    double peer_wait_s = 10;               // --peer-wait: how long a peer_lost rank waits for a root cause
    double backoff_s = 0;                  // 0: Slurm's own requeue hold (~120 s); else BASE*2^restarts
    std::string state_dir;                 // shared dir for one-leader-per-failure (optional)
    std::string node_state_dir;            // this node's base dir for the leader claim, %n = node ("" default)
    std::string preflight;                 // command run before the child; failure = gpu fault
    size_t stderr_tail_bytes = 64 * 1024;
    bool capture_stderr = true;
};

using Getenv = std::function<std::optional<std::string>(const std::string&)>;

// The full parse: config file, environment, argv (argv[0] is skipped).
// Throws ParseError with one message naming the input and what was expected.
Options parse_options(int argc, const char* const* argv, const Getenv& getenv_fn);

// The pieces, for tests.
void apply_config_text(Options& o, const std::string& text, const std::string& file_name);
std::vector<std::string> option_keys();

// Value parsers. Throw ParseError naming `what`.
double parse_duration(const std::string& text, const std::string& what);  // "90", "90s", "30m", "2h", "1d", "1h30m"
int parse_signal(const std::string& text, const std::string& what);      // "USR2", "SIGUSR2", "12"
std::string signal_name(int sig);                                         // "SIGUSR2"
std::vector<int> parse_int_list(const std::string& text, const std::string& what);  // "1,2,10-12"

std::string usage_text();

}  // namespace gputopo::launch
