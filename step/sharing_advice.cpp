#include "step/sharing_advice.hpp"

#ifndef GPUTOPO_SLURM_VERSION_NUMBER
#define GPUTOPO_SLURM_VERSION_NUMBER 0UL
#endif

namespace gputopo::step {

namespace {

std::string release_name(unsigned long v) {
    std::string minor = std::to_string((v >> 8) & 0xff);
    return std::to_string(v >> 16) + "." + (minor.size() < 2 ? "0" : "") + minor;
}

}  // namespace

std::string per_task_cgroup_sharing_advice(const std::string& what, unsigned long slurm_version_number) {
    std::string line = what == "share" ? "share is not possible here" : what + ": ranks on this node cannot reach each other's GPUs";
    line += ": each task's device cgroup holds only its own GPUs (--gpus-per-task under ConstrainDevices: no CUDA IPC "
            "or peer access between ranks); ";
    if (slurm_version_number >= kAllowTaskSharingSince)
        return line + "add --gres-flags=allow-task-sharing (Slurm 23.11+) to keep one GPU set per task and let the "
                      "step's tasks open each other's GPUs";
    const std::string release = slurm_version_number ? "Slurm " + release_name(slurm_version_number) : "this Slurm";
    return line + "use --gpus-per-node with --ntasks-per-node for ranks that share GPUs (" + release +
           " has no --gres-flags=allow-task-sharing, which came in 23.11)";
}

unsigned long built_slurm_version() { return GPUTOPO_SLURM_VERSION_NUMBER; }

}  // namespace gputopo::step
