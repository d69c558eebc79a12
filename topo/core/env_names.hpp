// Every environment variable name gputopo reads or sets, defined once and
// used by the plugin, the launcher, the CLI and the tests alike.
#pragma once

namespace gputopo::env {

// Set per task by the plugin (and by the launcher when the plugin is absent).
inline constexpr const char* kMode = "GPUTOPO_MODE";
inline constexpr const char* kGpus = "GPUTOPO_GPUS";            // physical GPU indices, "3" or "2,3"
inline constexpr const char* kGpuPci = "GPUTOPO_GPU_PCI";       // "0000:5d:00.0,..."
inline constexpr const char* kCpus = "GPUTOPO_CPUS";            // cpulist
inline constexpr const char* kMems = "GPUTOPO_MEMS";            // NUMA node list
inline constexpr const char* kNic = "GPUTOPO_NIC";              // the task's NIC(s), nearest first
inline constexpr const char* kIsland = "GPUTOPO_ISLAND";
inline constexpr const char* kIslandRank = "GPUTOPO_ISLAND_RANK";
inline constexpr const char* kIslandSize = "GPUTOPO_ISLAND_SIZE";
inline constexpr const char* kNumIslands = "GPUTOPO_NUM_ISLANDS";
inline constexpr const char* kRank = "GPUTOPO_RANK";            // island-ordered global rank

// The user's --gpu-bind, passed from srun (local context) to the step in
// srun's environment, which srun hands to the tasks (step/user_gpu_bind.hpp).
inline constexpr const char* kUserGpuBind = "GPUTOPO_GPU_BIND";

// Third-party variables gputopo sets (never overwriting a user's value).
inline constexpr const char* kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
inline constexpr const char* kCudaDeviceOrder = "CUDA_DEVICE_ORDER";
inline constexpr const char* kRocrVisibleDevices = "ROCR_VISIBLE_DEVICES";
inline constexpr const char* kHipVisibleDevices = "HIP_VISIBLE_DEVICES";
inline constexpr const char* kNcclIbHca = "NCCL_IB_HCA";
inline constexpr const char* kNcclIbGidIndex = "NCCL_IB_GID_INDEX";
inline constexpr const char* kNcclSocketIfname = "NCCL_SOCKET_IFNAME";
inline constexpr const char* kNcclTopoFile = "NCCL_TOPO_FILE";
inline constexpr const char* kUcxNetDevices = "UCX_NET_DEVICES";

// Framework process-group variables (launcher).
inline constexpr const char* kRankVar = "RANK";
inline constexpr const char* kLocalRank = "LOCAL_RANK";
inline constexpr const char* kWorldSize = "WORLD_SIZE";
inline constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kMasterAddr = "MASTER_ADDR";
inline constexpr const char* kMasterPort = "MASTER_PORT";

}  // namespace gputopo::env
