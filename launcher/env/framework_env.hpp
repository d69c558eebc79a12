// The framework variables (RANK, MASTER_ADDR, torchrun's ...) come from
// step/framework_env.hpp, the one implementation the plugin uses too; this
// header names them in the launcher and adds the launcher-only JAX check.
#pragma once

#include <string>

#include "launcher/options/options.hpp"
#include "step/framework_env.hpp"

namespace gputopo::launch {

using step::apply_island_order;
using step::first_host;
using step::FrameworkInputs;
using step::framework_env;
using step::master_port;
using step::port_clash;
using step::tasks_on_node;
using step::torchrun_env;

// JAX on Slurm restricts a process to local device SLURM_LOCALID (jax
// _src/clusters/slurm_cluster.py get_local_process_id; cluster.py
// auto_detect_unset_distributed_params: local_device_ids = [local id]). The
// task must see at least local id + 1 GPUs. `visible` is the
// CUDA_VISIBLE_DEVICES the program gets. "" when fine, else one line.
std::string jax_device_problem(int local_id, const std::string& visible);

}  // namespace gputopo::launch
