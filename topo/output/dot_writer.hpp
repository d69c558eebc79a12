// A node as a Graphviz graph (gputopo show --format dot; render with
// `dot -Tsvg`). Pure. The same content as the SVG picture (svg_writer.hpp):
// one cluster per package, one per NUMA node holding its PCIe switches, GPUs
// and NICs (picture_model.hpp), unusable NICs dashed, GPU links as edges (an
// NVSwitch fabric as one node), and with a plan each task's GPUs and NICs
// filled in the task's colour and its CPUs listed in its NUMA node's label.
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"

namespace gputopo {

// `islands` as for topology_svg; `plan` may be null.
std::string topology_dot(const Node& node, const std::vector<int>& islands, const Plan* plan);

}  // namespace gputopo
