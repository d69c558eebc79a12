// The framework variables the plugin gives a task (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK/NODE_RANK, MASTER_ADDR,
// MASTER_PORT and torchrun's others), so `srun --gpu-topo=... python3
// train.py` forms a torch.distributed env:// group without gputopo-launch.
// The values come from step/framework_env.hpp, the launcher's own code; in
// island order (GPUTOPO_RANK / GPUTOPO_NODE_RANK among the task's island
// variables) RANK, ROLE_RANK, GROUP_RANK and NODE_RANK follow it. A variable
// the task already has (the user exported it) is never set.
// GPUTOPO_FRAMEWORK_SET lists the names set, so the launcher tells them from
// the user's. Slurm-free, pure apart from port_clash().
#pragma once

#include <string>
#include <vector>

#include "step/framework_env.hpp"

namespace gputopo::spank {

struct FrameworkTask {
    std::vector<EnvVar> set;  // to set (overwrite), GPUTOPO_FRAMEWORK_SET last; empty: nothing
    std::string warning;      // one line for the user ("" none): MASTER_PORT taken, a malformed variable
};

// `task_env`: the task's environment; `island_set`: the task's island
// variables (may be empty); `master_addr`: resolved once per node
// (step::resolve_master_addr), "" derive from the node list; `node_rank`: this
// node's place in Slurm's rank order (step/slurm_rank_order.hpp), <0 from the task's ranks.
FrameworkTask framework_for_task(const step::Getenv& task_env, const std::vector<EnvVar>& island_set,
                                 const std::string& master_addr, long node_rank = -1);

}  // namespace gputopo::spank
