// Islands as Kubernetes node labels, for topology-aware schedulers (Kueue
// Topology, KAI Topology, JobSet exclusive placement): the same island
// sources the plugin orders ranks by (island_map.hpp), written with the keys
// NVIDIA Topograph writes (Topograph docs/reference/node-labels.md, "Default
// label keys"), so Topology objects written for Topograph work unchanged:
//   network.topology.nvidia.com/accelerator  topology.conf BlockName= (topology/block),
//                                            and the node's NVML fabric clique
//                                            ("<ClusterUUID>.<CliqueId>", the value
//                                            Topograph's InfiniBand providers and the
//                                            GPU operator's nvidia.com/gpu.clique use)
//   network.topology.nvidia.com/leaf         topology.conf SwitchName=X Nodes= (the leaf),
//                                            and gputopo.conf Island= / BlockName=
//   network.topology.nvidia.com/spine        the switch whose Switches= lists the leaf
//   network.topology.nvidia.com/core         the switch above that
// Each key can be replaced (LabelKeys). Values follow Topograph's rule: a
// value of at most 63 characters that Kubernetes accepts is used as is;
// a longer (or, here, a non-conforming) one becomes "x" + the FNV-64a hash in
// 16 lower-case hex digits, so equal names still give equal labels. Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "topo/fabric/island_map.hpp"

namespace gputopo {

struct LabelKeys {
    std::string accelerator = "network.topology.nvidia.com/accelerator";
    std::string leaf = "network.topology.nvidia.com/leaf";
    std::string spine = "network.topology.nvidia.com/spine";
    std::string core = "network.topology.nvidia.com/core";
    std::string island = "network.topology.nvidia.com/leaf";  // gputopo.conf islands
};

// Kubernetes label value for `name` (see above).
std::string label_value(const std::string& name);

// The labels of `node` (ordered by key). `parents`: parse_switch_parents()
// of the topology.conf files; `clique`: the node's NVML clique from
// nvml_clique_of() ("UUID:CLIQUE"), "" when unknown or another node.
std::map<std::string, std::string> node_labels(const IslandMap& map, const std::map<std::string, std::string>& parents,
                                               const std::string& node, const std::string& clique, const LabelKeys& keys);

}  // namespace gputopo
