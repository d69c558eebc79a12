// A picture of a node as a standalone SVG document (gputopo show --format svg,
// gputopo plan --format svg). Pure: reads the model and, when given, a plan.
//
// Drawn from top to bottom: the CPU packages with their NUMA nodes (one small
// square per core, per PU when the source knows no cores), the PCIe tree under
// each NUMA node (PCIe switches and host bridges that fan out, picture_model.hpp),
// the GPUs (index, model, PCI bus id) and NICs (name, bus id, port, usable or
// why not; unusable NICs dashed and grey), a bar per GPU island (NVLink, xGMI,
// PCIe), and with a plan one colour per task on its GPUs, CPU cores and NICs
// with a legend table. Every GPU's bus id and every NIC's name is in the text.
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"
#include "topo/plan/planner.hpp"

namespace gputopo {

// `islands` is gpu_islands(node) (one id per GPU; empty: no island bars);
// `plan` may be null.
std::string topology_svg(const Node& node, const std::vector<int>& islands, const Plan* plan);

}  // namespace gputopo
