#include "step/layout_rank.hpp"

#include <optional>

#include "topo/core/env_names.hpp"
#include "topo/fabric/layout_placement.hpp"
#include "topo/fabric/layout_traffic.hpp"
#include "topo/fabric/step_islands.hpp"

namespace gputopo::step {

Plan local_id_order(int tasks) {
    Plan plan;
    plan.tasks.resize(static_cast<size_t>(tasks < 1 ? 1 : tasks));
    for (size_t i = 0; i < plan.tasks.size(); ++i) plan.tasks[i].task = static_cast<int>(i);
    return plan;
}

LayoutTaskRank layout_task_rank(const IslandMap& map, const std::string& node_name, const Plan& plan, int task,
                                const Getenv& getenv_fn, const LayoutRequest& request) {
    LayoutTaskRank out;
    try {
        std::optional<ModelShape> model;
        if (!request.model.empty()) model = parse_model_shape(request.model);
        TaskLayoutRank r = task_layout_rank(map, node_name, plan, task, getenv_fn, ParallelLayout::parse(request.layout),
                                            parse_nvlink_domain(request.nvlink_domain), model ? &*model : nullptr);
        out.rank = std::to_string(r.rank);
        out.world = std::to_string(r.world);
        out.layout = r.layout;
        out.env.push_back({env::kRank, out.rank, false});
        if (r.node_block) {
            out.node_rank = std::to_string(*r.node_block);
            out.env.push_back({env::kNodeRankIsland, out.node_rank, false});
        }
        if (!r.straddling.empty()) out.warning = "layout " + r.layout + ": " + r.straddling;
    } catch (const std::exception& e) {
        out = LayoutTaskRank{};
        out.problem = std::string("layout ") + request.layout + ": " + e.what();
    }
    return out;
}

}  // namespace gputopo::step
