#include "spank/framework_task.hpp"

#include <cstdlib>

#include "topo/core/env_names.hpp"

namespace gputopo::spank {

FrameworkTask framework_for_task(const step::Getenv& task_env, const std::vector<EnvVar>& island_set,
                                 const std::string& master_addr, long slurm_node_rank) {
    FrameworkTask out;
    std::vector<EnvVar> wanted;
    try {
        step::FrameworkInputs fi;
        fi.master_addr = master_addr;
        fi.node_rank = slurm_node_rank;
        wanted = step::framework_env(task_env, fi);
    } catch (const std::exception& e) {
        out.warning = std::string(e.what()) + "; framework variables (RANK, MASTER_ADDR, ...) not set";
        return out;
    }
    std::string rank, node_rank;
    for (const EnvVar& v : island_set) {
        if (v.name == env::kRank) rank = v.value;
        if (v.name == env::kNodeRankIsland) node_rank = v.value;
    }
    if (!rank.empty()) step::apply_island_order(wanted, rank, node_rank);
    std::string names, final_rank, final_port;
    for (const EnvVar& v : wanted) {
        auto cur = task_env(v.name);
        if (v.name == env::kRankVar) final_rank = cur ? *cur : v.value;
        if (v.name == env::kMasterPort) final_port = cur ? *cur : v.value;
        if (cur) continue;  // the user's value wins
        out.set.push_back({v.name, v.value, false});
        names += (names.empty() ? "" : ",") + v.name;
    }
    if (!names.empty()) out.set.push_back({env::kFrameworkSet, names, false});
    if (final_rank == "0" && !final_port.empty() && final_port.size() <= 5)
        out.warning = step::port_clash(std::atoi(final_port.c_str()));
    return out;
}

}  // namespace gputopo::spank
