#include "launcher/env/framework_env.hpp"

namespace gputopo::launch {

std::string jax_device_problem(int local_id, const std::string& visible) {
    if (visible.empty() || local_id < 1) return "";
    int count = 1;
    for (char c : visible) count += c == ',';
    if (local_id < count) return "";
    return "JAX takes local device SLURM_LOCALID=" + std::to_string(local_id) + " but this task sees " +
           std::to_string(count) + " GPU(s) (CUDA_VISIBLE_DEVICES=" + visible +
           "): with --framework=jax do not isolate tasks (plugin --gpu-topo without ,isolate; srun --gpus-per-node "
           "instead of --gpus-per-task): JAX itself keeps each process on its own GPU";
}

}  // namespace gputopo::launch
