// RDMA NIC choice for a node's local tasks (planner rule 4). Pure and
// deterministic.
//
// Only usable NICs count (Nic::usable(): RDMA, not storage, not known down).
// A GPU's nearest NICs are the usable NICs with the smallest
// gpu_nic_path().rank() (PIX < PXB < PHB < NODE < SYS). Every GPU of every
// task is a slot; slots are served most constrained first (fewest nearest
// NICs, then task order, then GPU order) and each takes the least loaded of
// its GPU's nearest NICs (ties: PCI order, then name with numbers
// compared as numbers: mlx5_9 before mlx5_10). A task's NICs are its
// slots' picks, nearest first (by the distance of each pick to its own GPU,
// then GPU order), duplicates removed: so its first NIC is one of the NICs
// nearest to any of its GPUs, and for one GPU, one nearest to that GPU.
// node_nics: every usable RDMA NIC of the node, in that same order — the same list
// for every task and every step on the node (NCCL_IB_HCA, NVIDIA/nccl#1478).
// Also: the node's RoCE v2 GID index, and which GPUs lost their nearest NIC
// (nearest among the NICs for GPU traffic, up or down) and what they fall back to.
#pragma once

#include <string>
#include <vector>

#include "topo/core/model.hpp"

namespace gputopo {

// Indices into node.nics of the usable NICs nearest to GPU `gpu`.
std::vector<size_t> nearest_nics(const Node& node, int gpu);

// task_gpus[t]: the GPUs of task t. Returns each task's NIC names.
std::vector<std::vector<std::string>> select_nics(const Node& node, const std::vector<std::vector<int>>& task_gpus);

std::vector<std::string> usable_node_nics(const Node& node);

// The GID index for NCCL_IB_GID_INDEX from the node's usable NICs: the index
// shared by all their RoCE ports; -1 when there is none (InfiniBand) or they
// disagree (NCCL takes one value per process: then leave it to the user).
int node_roce_gid_index(const Node& node);

// A GPU whose nearest RDMA NIC(s) are down and that falls back to the next
// nearest usable one.
struct NicFallback {
    int gpu = -1;
    std::vector<std::string> lost;      // nearest NICs, all down
    std::vector<std::string> fallback;  // what it uses instead (may be empty: none left)
    std::string lost_path;              // distance class to the lost NICs ("PIX")
    std::string fallback_path;          // to the fallback NICs ("SYS"), "" if none
};
std::vector<NicFallback> nic_fallbacks(const Node& node);
// "GPU 3: nearest NIC mlx5_2 (PIX) is down; using mlx5_0 (NODE)"
std::string describe(const NicFallback& f);

// The fallbacks as warnings on the node, once its port state is known (after
// the live sources are merged, or a file is read): what `gputopo show` prints
// and the plugin's cache snapshot keeps. The one place a node's warnings name them.
void add_nic_fallback_warnings(Node& node);


}  // namespace gputopo
