#include "topo/plan/omp_env.hpp"

#include <algorithm>

#include "topo/core/env_names.hpp"

namespace gputopo {

std::vector<CpuSet> omp_places(const Node& node, const CpuSet& cpus, bool per_thread) {
    std::vector<CpuSet> places;
    if (cpus.empty()) return places;
    CpuSet covered;
    if (!per_thread) {
        for (const auto& core : node.cores) {
            CpuSet mine = core.pus & cpus;
            if (mine.empty()) continue;
            places.push_back(mine);
            covered |= mine;
        }
    }
    // PUs no core holds (no core information, or per thread): one place each.
    for (int pu : (cpus - covered).to_vector()) {
        CpuSet one;
        one.set(pu);
        places.push_back(one);
    }
    if (!covered.empty() && covered != cpus) {
        // Keep places in CPU order when both kinds are present.
        std::stable_sort(places.begin(), places.end(),
                         [](const CpuSet& a, const CpuSet& b) { return a.first() < b.first(); });
    }
    return places;
}

std::string format_omp_places(const std::vector<CpuSet>& places) {
    std::string out;
    for (const auto& p : places) {
        if (!out.empty()) out += ",";
        out += "{";
        bool first = true;
        for (int pu : p.to_vector()) {
            if (!first) out += ",";
            out += std::to_string(pu);
            first = false;
        }
        out += "}";
    }
    return out;
}

std::vector<EnvVar> omp_env(const Node& node, const CpuSet& cpus, bool per_thread) {
    std::vector<CpuSet> places = omp_places(node, cpus, per_thread);
    if (places.empty()) return {};
    return {{env::kOmpNumThreads, std::to_string(places.size()), true},
            {env::kOmpPlaces, format_omp_places(places), true},
            {env::kOmpProcBind, "close", true}};
}

}  // namespace gputopo
