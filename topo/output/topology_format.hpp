// Rendering a Node as the text people read (`gputopo show`) and as JSON.
// Pure: the CLI, the plugin's verbose output and the launcher reuse it.
//
// The matrix section reads like `nvidia-smi topo -m`: tab-separated columns
// GPU0.. NIC0.., cells from gpu_gpu_path / gpu_nic_path / nic_nic_path
// (topo/core/distance.hpp, the one definition of the vocabulary X, NV#, XGMI#,
// C2C, PIX, PXB, PHB, NODE, SYS), CPU and NUMA affinity columns, a legend and
// a NIC legend.
//
// `islands` is gpu_islands(node) (topo/plan/islands.hpp): one island id per GPU
// index; pass an empty vector to leave islands out.
#pragma once

#include <string>
#include <vector>

#include "topo/output/json_writer.hpp"
#include "topo/core/model.hpp"

namespace gputopo {

// The node's warnings are not in the table: front ends print them with their
// own prefix (the CLI on standard error, "gputopo: warning: ...").
std::string topology_table(const Node& node, const std::vector<int>& islands);

// Only the nvidia-smi-like matrix with its legends.
std::string topology_matrix(const Node& node);

// JSON: {"hostname", "source", "cpus", "packages": [...], "numa_nodes": [...],
// "gpus": [...], "nics": [...], "links": [...], "gpu_gpu": [[label...]...],
// "gpu_nic": [[...]], "nic_nic": [[...]], "islands": [[gpu...]...],
// "warnings": [...]}. Unknown NUMA nodes are null. See man/gputopo.1.
void write_topology_json(JsonWriter& w, const Node& node, const std::vector<int>& islands);
std::string topology_json(const Node& node, const std::vector<int>& islands, int indent = 2);

}  // namespace gputopo
