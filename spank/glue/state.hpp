// What every SPANK context of the plugin shares (srun, sbatch, salloc, slurmd,
// slurmstepd): plugstack.conf's arguments and the --gpu-topo option as its
// callback saw it. Each context keeps its own state in its own file
// (remote_context.cpp: the slurmstepd's step binding). Internal to the glue.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

#include <optional>
#include <string>

#include "spank/plugstack_args.hpp"
#include "topo/core/model.hpp"
#include "step/option_parser.hpp"

namespace gputopo::spank {

struct SharedConfig {
    bool config_ok = false;
    std::string config_error;                  // plugstack.conf problem, logged once
    PluginConfig config;
    std::optional<step::Options> user_options; // --gpu-topo as given to srun/sbatch/salloc
    std::string user_option_error;
};

SharedConfig& shared();

// The job's --gpu-topo (sbatch/salloc) as Slurm hands it to the steps in the
// environment (plugin.cpp).
extern const char* const kJobOptionVars[2];

// The option Slurm shows for us: --gpu-topo=MODE[,FLAG...].
int register_option(spank_t sp);

// Reads `name` from the job's environment (remote context), whole: a value
// longer than kMaxJobEnvValue (job_env.hpp) throws ParseError naming the
// variable, never taken as unset.
std::optional<std::string> job_getenv(spank_t sp, const char* name);

// wrap= (wrap.cpp): whether this build can prepend to a task's argv (Slurm 23.11+),
// and doing it for one task of an active step (slurm_spank_task_init).
bool wrap_supported();
void wrap_task(spank_t sp, int task, const std::string& node_name);

// Per context: local_context.cpp, slurmd_context.cpp, remote_context.cpp.
int local_init_post_opt(spank_t sp, int ac, char** av);
void slurmd_init();                 // slurmd start: refresh a stale cache= (live discovery)
// The same refresh, for slurmstepd (root) in init_post_opt: the node it
// discovered when the cache could not be written (then used by user_init
// instead of discovering again), else nothing.
std::optional<Node> refresh_stale_cache();
// One line in slurmd's log, once per node and boot, for a cache that cannot be written.
void warn_cache_unwritable(const std::string& why);
int remote_init_post_opt(spank_t sp, int ac, char** av);
int remote_user_init(spank_t sp);   // slurmstepd, once per node: the binding for every local task
int remote_task_init(spank_t sp);   // in each forked task: apply what user_init prepared

}  // namespace gputopo::spank
