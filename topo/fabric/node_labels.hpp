// Islands as Kubernetes node labels, for topology-aware schedulers (Kueue
// Topology, KAI Topology, JobSet placement): the same island sources the
// plugin orders ranks by (island_map.hpp), written with the keys NVIDIA
// Topograph writes, so Topology objects written for Topograph work unchanged.
// Topograph (docs/engines/k8s.md at commit 01572e39, release 1.1):
//   fabric.topograph.run/tier-0          the leaf switch: topology.conf SwitchName=X Nodes=,
//                                        and gputopo.conf Island= / BlockName= islands
//   fabric.topograph.run/tier-1, tier-2  the switches above it (Switches= lines)
//   accelerator.topograph.run/domain     topology.conf BlockName= (topology/block, an
//                                        NVL72 rack); or the node's NVML fabric ClusterUUID
//   accelerator.topograph.run/sub-domain the NVML clique within it: "<ClusterUUID>.<CliqueId>"
// Earlier Topograph releases (docs/reference/node-labels.md at commit
// 03e70a5f) wrote network.topology.nvidia.com/{leaf,spine,core,accelerator}
// (the accelerator value being "<ClusterUUID>.<CliqueId>"): legacy_label_keys().
// Values follow Topograph's rule: a value of at most 63 characters that
// Kubernetes accepts is used as is; a longer (or, here, a non-conforming) one
// becomes "x" + its FNV-64a hash in 16 lower-case hex digits, so equal names
// still give equal labels. Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "topo/fabric/island_map.hpp"

namespace gputopo {

struct LabelKeys {
    std::string accelerator = "accelerator.topograph.run/domain";
    std::string sub_domain = "accelerator.topograph.run/sub-domain";  // "" : the clique goes to `accelerator`
    std::string leaf = "fabric.topograph.run/tier-0";
    std::string spine = "fabric.topograph.run/tier-1";
    std::string core = "fabric.topograph.run/tier-2";
    std::string island = "fabric.topograph.run/tier-0";  // gputopo.conf islands
};
LabelKeys legacy_label_keys();  // network.topology.nvidia.com/*

// Kubernetes label value for `name` (see above).
std::string label_value(const std::string& name);

// The labels of `node` (ordered by key). `parents`: parse_switch_parents()
// of the topology.conf files; `clique`: the node's NVML clique from
// nvml_clique_of() ("UUID:CLIQUE"), "" when unknown or another node.
std::map<std::string, std::string> node_labels(const IslandMap& map, const std::map<std::string, std::string>& parents,
                                               const std::string& node, const std::string& clique, const LabelKeys& keys);

}  // namespace gputopo
