// GPUs named by UUID in CUDA_VISIBLE_DEVICES, as Slurm sets it when its GRES
// records carry a unique id: gpu/nvml (AutoDetect=nvml) puts "GPU-<uuid>" for
// a whole GPU and, with MIG, "MIG-<uuid>" (drivers >= 470.42.01) or the older
// "MIG-GPU-<gpu uuid>/<gi>/<ci>" for each instance (Slurm src/plugins/gpu/nvml/
// gpu_nvml.c, _handle_mig(): unique_id), and gres_common.c writes the unique
// id instead of the index (common_gres_set_env: "If unique_id is set for the
// device, assume that we want to use it for the env var"). SLURM_STEP_GPUS then
// holds GRES record indices, which with MIG are not GPU indices.
// A user may also export UUIDs herself on a node without GPU GRES.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "topo/core/model.hpp"

namespace gputopo::step {

// "GPU-..." or "MIG-..." (case as NVML writes it).
bool is_device_uuid(const std::string& id);

// The entries of a CUDA_VISIBLE_DEVICES value when every entry is a UUID;
// empty otherwise (indices, "NoDevFiles", empty).
std::vector<std::string> split_device_uuids(const std::string& value);

// The index of the GPU that device `id` is or belongs to, through the node's
// GPU UUIDs and MIG instance UUIDs (NVML, or the topology/cache): -1 when no
// GPU of the node knows it.
int parent_gpu(const Node& node, const std::string& id);

// Parents of every id, in order; nullopt (and *unknown = the first id not
// found) when one is not found.
std::optional<std::vector<int>> parent_gpus(const Node& node, const std::vector<std::string>& ids,
                                            std::string* unknown);

// `ids` reordered to follow `order` (GPU indices by position; a GPU may repeat):
// first, for each position, one id of that GPU not taken yet (so position i
// holds an instance of order[i]'s GPU); then the other ids of the GPUs in
// `order`, GPU by GPU; then ids whose GPU is not in `order`. Ids of one GPU
// keep Slurm's order.
std::vector<std::string> order_ids(const std::vector<std::string>& ids, const std::vector<int>& parents,
                                   const std::vector<int>& order);

}  // namespace gputopo::step
