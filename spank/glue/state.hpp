// What the plugin keeps between SPANK callbacks of one process (srun, sbatch,
// slurmd or one slurmstepd). Internal to the plugin's glue.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

#include <optional>
#include <string>
#include <vector>

#include "step/option_parser.hpp"
#include "spank/plugstack_args.hpp"
#include "step/step_inputs.hpp"
#include "topo/fabric/island_map.hpp"
#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"

namespace gputopo::spank {

struct PluginState {
    bool config_ok = false;
    std::string config_error;            // plugstack.conf problem, logged once
    PluginConfig config;
    std::optional<Options> user_options; // --gpu-topo as given to srun/sbatch/salloc
    std::string user_option_error;

    // slurmstepd, filled by user_init (before the tasks fork):
    std::optional<Node> preloaded_node;  // read by init_post_opt (root) through the cache
    std::string preloaded_for;           // the node name it was read for
    bool planned = false;                // a plan exists for this node's step
    Options effective;                   // user's options, else the job's, else default=
    std::string node_name;
    Node node;
    Plan plan;
    StepInputs inputs;
    bool cpus_on_host = false;
    std::string problem;                 // why this step runs unbound ("" when fine)
    double plan_us = 0;                  // time user_init spent (read + plan)
    int local_tasks = 0;
    // islands= (mode island): loaded once per node by user_init.
    std::optional<IslandMap> islands;
    std::string islands_problem;         // why there are no island variables ("" when fine)
    std::string islands_from;            // the island sources, for verbose
};

PluginState& state();

// The option Slurm shows for us: --gpu-topo=MODE[,FLAG...].
extern const char* const kOptionName;
int register_option(spank_t sp);

// Reads `name` from the job's environment (remote context).
std::optional<std::string> job_getenv(spank_t sp, const char* name);

// slurm_spank_init_post_opt, per context (local_context.cpp, remote_context.cpp).
int local_init_post_opt(spank_t sp, int ac, char** av);
int remote_init_post_opt(spank_t sp, int ac, char** av);

}  // namespace gputopo::spank
