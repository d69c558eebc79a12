// What Slurm tells a step about its resources on this node, parsed from the
// step's environment as Slurm set it. Strings in, struct out; no Slurm calls.
//   SLURM_STEP_GPUS (else SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES): the GPU
//     indices of the step on this node ("0,1,2,3"; ranges "0-3" accepted)
//   CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES as Slurm set them: when they
//     count 0..k-1 while the step's GPUs are other indices, Slurm numbers
//     devices relative to the step (cgroup ConstrainDevices)
//   SLURM_CPUS_PER_TASK, SLURM_CPU_BIND (an explicit map/mask the user asked for)
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "topo/core/cpuset.hpp"
#include "topo/core/model.hpp"

namespace gputopo::step {

using Getenv = std::function<std::optional<std::string>(const std::string&)>;

// What the user asked Slurm for with --cpu-bind:
//   Slurm  nothing (task/affinity's automatic mask, TaskPluginParam, CpuBind= of
//          the node or partition, or no task plugin binding): gputopo replaces it
//   None   --cpu-bind=none: no CPU binding and no memory policy from gputopo
//   User   a binding the user typed (cores, map_cpu:..., mask_cpu:..., ldoms, ...):
//          kept; the task's memory still follows its CPUs' NUMA nodes
enum class CpuBindRequest { Slurm, None, User };

// From the user's --cpu-bind as srun's side recorded it (`typed`, env::kUserCpuBind;
// "" = nothing typed), else (no plugin in srun, e.g. gputopo-launch alone) from
// the task's SLURM_CPU_BIND_TYPE: "none" is None; map_cpu:, map_ldom:, mask_ldom:,
// rank_ldom: and rank are User; mask_cpu: is taken as Slurm's, since task/affinity
// writes its automatic binding (and --cpu-bind=cores/sockets/threads) that way.
// "verbose" and "quiet" alone ask for nothing.
CpuBindRequest cpu_bind_request(const std::optional<std::string>& typed, const std::optional<std::string>& bind_type);

struct StepInputs {
    std::vector<int> gpus;           // the step's GPUs on this node, sorted; empty: none
    std::string gpus_from;           // the variable they came from, "" when none
    bool relative_numbering = false; // Slurm's CUDA_VISIBLE_DEVICES counts 0..k-1
    int cpus_per_task = 0;           // 0: not given
    std::string cpu_bind;            // SLURM_CPU_BIND as given
    CpuBindRequest cpu_request = CpuBindRequest::Slurm;  // cpu_bind_request()
    std::string user_cpu_bind;       // what the user typed (User / None), for messages
    // CUDA_VISIBLE_DEVICES as Slurm set it when it names devices by UUID
    // (GPU-..., MIG-...; step/gpu_ids.hpp), Slurm's order; empty: indices.
    std::vector<std::string> device_ids;
    // resolve_step_devices(): the GPU index each device_ids entry is or
    // belongs to; empty when unresolved (then device_problem says why).
    std::vector<int> device_parents;
    std::string device_problem;
    // The user's --gpu-bind / --tres-bind=gres/gpu as srun passed it on
    // (env::kUserGpuBind, step/user_gpu_bind.hpp); "" when none.
    std::string gpu_bind;
};

// GPU indices a node can have: every index read is below this.
constexpr int kMaxGpuIndex = 1024;

// "0,1,5-7" -> {0,1,5,6,7}, sorted, unique. Throws ParseError naming `var`,
// also for an index >= kMaxGpuIndex (ranges are never expanded beyond it).
std::vector<int> parse_index_list(const std::string& text, const std::string& var);

// Throws ParseError on a malformed SLURM_STEP_GPUS / SLURM_JOB_GPUS.
StepInputs read_step_inputs(const Getenv& getenv);

// With device_ids: their parent GPUs become `gpus` (the planner plans on
// GPUs; instances of one GPU share it); a device no GPU of `node` knows sets
// device_problem and leaves the visible devices to Slurm.
void resolve_step_devices(const Node& node, StepInputs& in);

// This node's Slurm name as the step's environment gives it: entry `node_id`
// (the node's position in the step, S_JOB_NODEID) of SLURM_STEP_NODELIST /
// SLURM_JOB_NODELIST, else `host`. SLURMD_NODENAME is not read: before a task
// starts, that variable in the job's environment is whatever the user exported
// (slurmstepd sets it only in each task's environment).
std::string slurm_node_name(const Getenv& getenv, int node_id, const std::string& host);

// The CPUs the planner may use: `affinity` (what this process may run on)
// within the node's CPUs, when the topology's CPUs exist on this host
// (`host_cpus`: the CPUs the host has); otherwise nullopt (every CPU of the
// node, as the topology describes a different machine).
std::optional<CpuSet> allowed_cpus(const Node& node, const CpuSet& host_cpus, const CpuSet& affinity);

// True when every CPU of the topology exists on this host.
bool topology_cpus_on_host(const Node& node, const CpuSet& host_cpus);

}  // namespace gputopo::step
