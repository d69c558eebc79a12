#include "step/gpu_ids.hpp"

#include <algorithm>

namespace gputopo::step {

namespace {

// "MIG-GPU-<gpu uuid>/<gi>/<ci>" (drivers before 470.42.01): the GPU's UUID.
std::string legacy_mig_parent(const std::string& id) {
    if (id.rfind("MIG-GPU-", 0) != 0) return "";
    size_t slash = id.find('/');
    return id.substr(4, slash == std::string::npos ? std::string::npos : slash - 4);
}

}  // namespace

bool is_device_uuid(const std::string& id) {
    return id.size() > 4 && (id.rfind("GPU-", 0) == 0 || id.rfind("MIG-", 0) == 0);
}

std::vector<std::string> split_device_uuids(const std::string& value) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= value.size()) {
        size_t comma = value.find(',', start);
        std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!is_device_uuid(item)) return {};
        out.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

int parent_gpu(const Node& node, const std::string& id) {
    const std::string legacy = legacy_mig_parent(id);
    for (const Gpu& g : node.gpus) {
        if (!g.uuid.empty() && (g.uuid == id || g.uuid == legacy)) return g.index;
        if (std::find(g.mig_uuids.begin(), g.mig_uuids.end(), id) != g.mig_uuids.end()) return g.index;
    }
    return -1;
}

std::optional<std::vector<int>> parent_gpus(const Node& node, const std::vector<std::string>& ids,
                                            std::string* unknown) {
    std::vector<int> out;
    for (const std::string& id : ids) {
        int p = parent_gpu(node, id);
        if (p < 0) {
            if (unknown) *unknown = id;
            return std::nullopt;
        }
        out.push_back(p);
    }
    return out;
}

std::vector<std::string> order_ids(const std::vector<std::string>& ids, const std::vector<int>& parents,
                                   const std::vector<int>& order) {
    std::vector<std::string> out;
    std::vector<bool> used(ids.size(), false);
    auto take = [&](int gpu, bool all) {
        for (size_t i = 0; i < ids.size(); ++i)
            if (!used[i] && i < parents.size() && parents[i] == gpu) {
                out.push_back(ids[i]);
                used[i] = true;
                if (!all) return;
            }
    };
    for (int gpu : order) take(gpu, false);
    for (int gpu : order) take(gpu, true);
    for (size_t i = 0; i < ids.size(); ++i)
        if (!used[i]) out.push_back(ids[i]);
    return out;
}

}  // namespace gputopo::step
