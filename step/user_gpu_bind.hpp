// A GPU binding the user asked Slurm for: srun --gpu-bind=X or
// --tres-bind=gres/gpu:X (23.11+ makes --gpu-bind an alias of the latter).
// Slurm gives each task its GPUs from it (task i of --gpu-bind=map_gpu:3,2,1,0
// gets SLURM_STEP_GPUS=3-i) but passes the option itself to no task
// (SLURM_GPU_BIND is an input variable of srun, and an output variable of
// sbatch/salloc only: Slurm 22.05 src/common/env.c set_env_from_opts()).
// So srun's side of the plugin (local context) reads it from srun's command
// line and environment and puts it in srun's own environment as
// env::kUserGpuBind, which srun hands to the step like the rest of its
// environment (spank_job_control_setenv only reaches a new allocation, not
// the step, in 22.05: src/common/slurm_opt.c slurm_opt_create_job_desc());
// read_step_inputs picks it up there. With srun --export=NONE it is lost and
// gputopo orders the GPUs itself.
// Slurm's own default binding (srun's implicit per_task:N / single:N for
// --gpus-per-task / --ntasks-per-gpu) is not the user's: gputopo orders it.
#pragma once

#include <string>
#include <vector>

#include "step/step_inputs.hpp"

namespace gputopo::step {

// The --gpu-bind value in srun's command line `argv` (argv[0] is srun),
// scanning srun's options only (up to the program). --tres-bind=gres/gpu:X
// gives X. Else SLURM_GPU_BIND, else the gres/gpu part of SLURM_TRES_BIND
// from `env` (srun's input variables, also set for a batch script by
// #SBATCH --gpu-bind). A leading "verbose," is dropped; "verbose" alone (no
// binding) gives "". "" when the user asked for nothing.
std::string user_gpu_bind(const std::vector<std::string>& argv, const Getenv& env);

// The --cpu-bind value the user typed in srun's command line (--cpu-bind or
// --cpu_bind), else SLURM_CPU_BIND from srun's environment (#SBATCH
// --cpu-bind, or exported): srun's side of the plugin records it as
// env::kUserCpuBind, "" when the user asked for nothing. task/affinity writes
// its own automatic binding into each task's SLURM_CPU_BIND just as it writes
// the user's (seen: "quiet,mask_cpu:0x1,0x2" for both no --cpu-bind and
// --cpu-bind=cores), so only srun can tell them apart.
std::string user_cpu_bind(const std::vector<std::string>& argv, const Getenv& env);

// The GPU indices Slurm gave this task, from the task's environment: its
// SLURM_STEP_GPUS (22.05 narrows it per task), or CUDA_VISIBLE_DEVICES /
// ROCR_VISIBLE_DEVICES when those are narrower (a release that narrows only
// them), mapped back through the step's GPUs when Slurm numbers them relative
// to the step (`step`: the step's inputs from user_init). Empty when none can
// be read.
std::vector<int> task_gpus_from_slurm(const Getenv& task_env, const StepInputs& step);

}  // namespace gputopo::step
