// Islands (see islands.hpp):
//  1. GPUs joined by a GPU link (NVLink, xGMI, C2C; direct or through
//     NVSwitch; any link count) are in one island: connected components.
//  2. GPUs with no GPU link at all are grouped by PCIe: two such GPUs whose
//     path is PIX or PXB (below a common PCIe switch, no host bridge) are in
//     one island (transitively).
//  3. Any other GPU is an island of its own.
// Island ids count up from 0 in order of each island's lowest GPU index.
#include "topo/plan/islands.hpp"

#include <numeric>

#include "topo/core/distance.hpp"

namespace gputopo {

namespace {

int find_root(std::vector<int>& parent, int x) {
    while (parent[static_cast<size_t>(x)] != x) {
        parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
        x = parent[static_cast<size_t>(x)];
    }
    return x;
}

void join(std::vector<int>& parent, int a, int b) {
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return;
    if (a < b)
        parent[static_cast<size_t>(b)] = a;
    else
        parent[static_cast<size_t>(a)] = b;
}

}  // namespace

std::vector<int> gpu_islands(const Node& node) {
    const int n = static_cast<int>(node.gpus.size());
    std::vector<int> parent(static_cast<size_t>(n));
    std::iota(parent.begin(), parent.end(), 0);
    std::vector<bool> linked(static_cast<size_t>(n), false);
    for (const auto& l : node.links) {
        if (l.count <= 0 || l.a < 0 || l.b < 0 || l.a >= n || l.b >= n || l.a == l.b) continue;
        linked[static_cast<size_t>(l.a)] = linked[static_cast<size_t>(l.b)] = true;
        join(parent, l.a, l.b);
    }
    for (int a = 0; a < n; ++a) {
        if (linked[static_cast<size_t>(a)]) continue;
        for (int b = a + 1; b < n; ++b) {
            if (linked[static_cast<size_t>(b)]) continue;
            PathClass c = gpu_gpu_path(node, a, b).cls;
            if (c == PathClass::PIX || c == PathClass::PXB) join(parent, a, b);
        }
    }
    // Number islands by their lowest GPU index: the root of each set is its
    // lowest member (join keeps the smaller root), so scan in index order.
    std::vector<int> id(static_cast<size_t>(n), -1);
    std::vector<int> root_id(static_cast<size_t>(n), -1);
    int next = 0;
    for (int g = 0; g < n; ++g) {
        int r = find_root(parent, g);
        if (root_id[static_cast<size_t>(r)] < 0) root_id[static_cast<size_t>(r)] = next++;
        id[static_cast<size_t>(g)] = root_id[static_cast<size_t>(r)];
    }
    return id;
}

}  // namespace gputopo
