// What the pictures of a node draw (gputopo show --format svg|dot), shared by
// svg_writer and dot_writer: per NUMA node the GPUs and NICs under it and the
// PCIe switches between them, the islands, and who owns what in a plan. Pure.
//
// The PCI tree is reduced to what tells distances apart: a bridge is kept only
// where it fans out to two or more GPUs/NICs (a PCIe switch, or a host bridge
// with several root ports); chains of single-child bridges are dropped.
// Devices without a PCI object hang directly under their NUMA node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "topo/core/model.hpp"

namespace gputopo {

struct DeviceTreeNode {
    enum Kind { Switch, HostBridge, GpuLeaf, NicLeaf };
    Kind kind = Switch;
    int index = -1;  // Node::pci index (Switch, HostBridge), GPU index, or Node::nics index
    std::vector<DeviceTreeNode> children;  // in PCI order of their first device
};

struct NumaDevices {
    int numa = -1;                        // NUMA node OS index; -1 for devices of unknown locality
    std::vector<DeviceTreeNode> roots;    // in PCI order of their first device
};

// Every GPU and NIC of the node exactly once, grouped by NUMA node (in
// node.numa_nodes order, then -1). NUMA nodes without devices are left out.
std::vector<NumaDevices> device_forest(const Node& node);

// Leaves (GPUs and NICs) under `t` (1 for a leaf).
int leaf_count(const DeviceTreeNode& t);
// Levels of switches above the leaves (0 for a leaf).
int switch_depth(const DeviceTreeNode& t);

// "PCIe switch 0000:16:00.0", "host bridge", as the pictures label them.
std::string tree_node_label(const Node& node, const DeviceTreeNode& t);

// The position in node.packages of the package holding `cpus` (the first that
// shares a CPU with it), -1 when none does.
int package_of(const Node& node, const CpuSet& cpus);

// Why a NIC is not used for GPU traffic, "" when it is (Nic::usable):
// "no RDMA device", "storage" or "no active port".
std::string nic_unusable_reason(const Nic& nic);

// Short GPU model for a label: "H100 80GB HBM3" from "NVIDIA H100 80GB HBM3".
std::string short_gpu_model(const std::string& model);

}  // namespace gputopo

namespace gputopo {

// GPU index lists per island id (gpu_islands(node)), islands in id order;
// GPUs with island -1 are left out.
std::map<int, std::vector<int>> island_members(const std::vector<int>& islands);

// What joins an island's GPUs: "NVLink", "xGMI", "C2C", "PCIe" or "single GPU".
std::string island_kind(const Node& node, const std::vector<int>& gpus);

}  // namespace gputopo

#include "topo/plan/planner.hpp"

namespace gputopo {

// Which tasks of a plan use each GPU, NIC and CPU (PU), for colouring.
struct PlanOwners {
    std::map<int, std::vector<int>> gpu_tasks;          // GPU index -> tasks
    std::map<std::string, std::vector<int>> nic_tasks;  // NIC name -> tasks that list it
    std::map<int, int> pu_task;                         // PU -> first task bound to it
};
PlanOwners plan_owners(const Plan& plan);

// A task's colour, "#rrggbb": ten strong colours, then ten light ones, then again.
std::string task_color(int task);

// The WCAG 2 contrast ratio of two "#rrggbb" colours, 1 (none) to 21 (black on white).
double contrast_ratio(const std::string& a, const std::string& b);
// Black or white, whichever contrasts more with `background`: text on a task's colour
// (at least 4.5:1, WCAG AA, for any colour).
std::string ink_on(const std::string& background);

}  // namespace gputopo
