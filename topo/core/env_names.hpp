// Every environment variable name gputopo reads or sets, defined once. Code
// names a variable through these constants, not a string literal.
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
inline constexpr const char* kNodeRankIsland = "GPUTOPO_NODE_RANK";  // the node's position in island order
// The framework variables (RANK, MASTER_ADDR, ...) the plugin set because the
// task had none: "RANK,LOCAL_RANK,...", so gputopo-launch tells them from the user's.
inline constexpr const char* kFrameworkSet = "GPUTOPO_FRAMEWORK_SET";
// Set by torchrun's agent in every worker (torch/distributed/elastic/agent/server/local_elastic_agent.py).
inline constexpr const char* kTorchelasticUseAgentStore = "TORCHELASTIC_USE_AGENT_STORE";

// The user's --gpu-bind, passed from srun (local context) to the step in
// srun's environment, which srun hands to the tasks (step/user_gpu_bind.hpp).
inline constexpr const char* kUserGpuBind = "GPUTOPO_GPU_BIND";
inline constexpr const char* kUserCpuBind = "GPUTOPO_CPU_BIND";  // the user's --cpu-bind, recorded by srun's side ("" = none typed)
inline constexpr const char* kStepGpus = "GPUTOPO_STEP_GPUS";     // the step's physical GPUs on the node (the plugin, for the launcher)

// Third-party variables gputopo sets (never overwriting a user's value).
inline constexpr const char* kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
inline constexpr const char* kCudaDeviceOrder = "CUDA_DEVICE_ORDER";
inline constexpr const char* kRocrVisibleDevices = "ROCR_VISIBLE_DEVICES";
inline constexpr const char* kHipVisibleDevices = "HIP_VISIBLE_DEVICES";
inline constexpr const char* kNcclIbHca = "NCCL_IB_HCA";
inline constexpr const char* kNcclIbGidIndex = "NCCL_IB_GID_INDEX";
inline constexpr const char* kNcclSocketIfname = "NCCL_SOCKET_IFNAME";
inline constexpr const char* kNcclTopoFile = "NCCL_TOPO_FILE";
inline constexpr const char* kNcclCumemEnable = "NCCL_CUMEM_ENABLE";  // read: 0 turns multi-node NVLink off (topo/mnnvl.hpp)
inline constexpr const char* kNcclMnnvlEnable = "NCCL_MNNVL_ENABLE";  // read: 0 turns multi-node NVLink off
inline constexpr const char* kImexChannelsDirVar = "GPUTOPO_IMEX_CHANNELS";  // read: the IMEX channel directory a step checks (tests)
inline constexpr const char* kUcxNetDevices = "UCX_NET_DEVICES";
inline constexpr const char* kNcclConfFile = "NCCL_CONF_FILE";  // read: the user's NCCL configuration file
// OpenMP placement from the task's CPUs (topo/plan/omp_env.hpp).
inline constexpr const char* kOmpNumThreads = "OMP_NUM_THREADS";
inline constexpr const char* kOmpPlaces = "OMP_PLACES";
inline constexpr const char* kOmpProcBind = "OMP_PROC_BIND";
// libfabric/OFI fabrics (topo/plan/fabric_env.hpp): fabric(7), fi_efa(7), fi_cxi(7).
inline constexpr const char* kFiProvider = "FI_PROVIDER";
inline constexpr const char* kFiEfaIface = "FI_EFA_IFACE";
inline constexpr const char* kFiCxiDeviceName = "FI_CXI_DEVICE_NAME";

// Framework process-group variables (launcher).
inline constexpr const char* kRankVar = "RANK";
inline constexpr const char* kLocalRank = "LOCAL_RANK";
inline constexpr const char* kWorldSize = "WORLD_SIZE";
inline constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kMasterAddr = "MASTER_ADDR";
inline constexpr const char* kMasterPort = "MASTER_PORT";
// What torchrun's agent also sets per worker.
inline constexpr const char* kGroupRank = "GROUP_RANK";
inline constexpr const char* kGroupWorldSize = "GROUP_WORLD_SIZE";
inline constexpr const char* kRoleRank = "ROLE_RANK";
inline constexpr const char* kRoleWorldSize = "ROLE_WORLD_SIZE";
inline constexpr const char* kRoleName = "ROLE_NAME";
inline constexpr const char* kNodeRank = "NODE_RANK";
inline constexpr const char* kTorchelasticRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr const char* kTorchelasticMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr const char* kTorchelasticRunId = "TORCHELASTIC_RUN_ID";
inline constexpr const char* kTorchelasticErrorFile = "TORCHELASTIC_ERROR_FILE";
inline constexpr const char* kGlooSocketIfname = "GLOO_SOCKET_IFNAME";

// gputopo's own settings, read.
inline constexpr const char* kNvmlLibrary = "GPUTOPO_NVML_LIBRARY";             // NVML to load (tests: the fake)
inline constexpr const char* kDebugTiming = "GPUTOPO_DEBUG_TIMING";             // plugin: time each phase
inline constexpr const char* kLaunchConfig = "GPUTOPO_LAUNCH_CONFIG";           // launcher config file
inline constexpr const char* kLaunchOptionPrefix = "GPUTOPO_LAUNCH_";           // + option key: launcher options
inline constexpr const char* kLaunchTopologyModule = "GPUTOPO_LAUNCH_TOPOLOGY_MODULE";
inline constexpr const char* kNoRequeueExit = "GPUTOPO_NO_REQUEUE_EXIT";        // set for the program
inline constexpr const char* kCheckpointTrigger = "GPUTOPO_CHECKPOINT_TRIGGER"; // set for checkpoint hooks
inline constexpr const char* kNnodes = "GPUTOPO_NNODES";
inline constexpr const char* kNvmlTimeout = "GPUTOPO_NVML_TIMEOUT";
inline constexpr const char* kPodsPerJob = "GPUTOPO_PODS_PER_JOB";
inline constexpr const char* kOriginalSlurmProcid = "GPUTOPO_SLURM_PROCID";  // Slurm's own, when --island-procid replaced it
// `gputopo run` (run/), set for the program of every step it launches.
inline constexpr const char* kRunRestartCount = "GPUTOPO_RESTART_COUNT";         // restarts so far: in the job + requeues
inline constexpr const char* kRunLastCheckpoint = "GPUTOPO_LAST_CHECKPOINT";     // what the program last wrote to the report file
inline constexpr const char* kRunCheckpointReport = "GPUTOPO_CHECKPOINT_REPORT"; // the file the program writes its checkpoint to
inline constexpr const char* kRunHeartbeat = "GPUTOPO_HEARTBEAT";                // heartbeat file pattern, %r = the rank
inline constexpr const char* kRankOrder = "GPUTOPO_RANK_ORDER";                  // "slurm": island mode keeps SLURM_PROCID as the rank (gputopo run's slots)
inline constexpr const char* kRunReplicas = "GPUTOPO_REPLICAS";                  // the replica peers table (run/replica_peers.hpp)
inline constexpr const char* kRunReplicationJump = "GPUTOPO_REPLICATION_JUMP";   // NVRx replication_jump (ranks), pairs plans only
inline constexpr const char* kRunReplicationFactor = "GPUTOPO_REPLICATION_FACTOR";  // NVRx replication_factor (2), with the jump

// Read from Slurm (job, step and task environment).
inline constexpr const char* kSlurmdNodename = "SLURMD_NODENAME";
inline constexpr const char* kSlurmClusterName = "SLURM_CLUSTER_NAME";
inline constexpr const char* kSlurmConf = "SLURM_CONF";
inline constexpr const char* kSlurmJobSegmentSize = "SLURM_JOB_SEGMENT_SIZE";  // sbatch --segment=S (23.11+)
inline constexpr const char* kSlurmCpusPerTask = "SLURM_CPUS_PER_TASK";
inline constexpr const char* kSlurmCpuBind = "SLURM_CPU_BIND";
inline constexpr const char* kSlurmCpuBindType = "SLURM_CPU_BIND_TYPE";
inline constexpr const char* kSlurmCpuBindList = "SLURM_CPU_BIND_LIST";
inline constexpr const char* kSlurmdTresBind = "SLURMD_TRES_BIND";
inline constexpr const char* kSlurmGpusOnNode = "SLURM_GPUS_ON_NODE";
inline constexpr const char* kSlurmJobid = "SLURM_JOBID";
inline constexpr const char* kSlurmJobId = "SLURM_JOB_ID";
inline constexpr const char* kSlurmJobEndTime = "SLURM_JOB_END_TIME";
inline constexpr const char* kSlurmJobGpus = "SLURM_JOB_GPUS";
inline constexpr const char* kSlurmJobNodelist = "SLURM_JOB_NODELIST";
inline constexpr const char* kSlurmJobNumNodes = "SLURM_JOB_NUM_NODES";
inline constexpr const char* kSlurmLocalid = "SLURM_LOCALID";
inline constexpr const char* kSlurmNnodes = "SLURM_NNODES";
inline constexpr const char* kSlurmNodeid = "SLURM_NODEID";
inline constexpr const char* kSlurmNodelist = "SLURM_NODELIST";
inline constexpr const char* kSlurmNtasks = "SLURM_NTASKS";
inline constexpr const char* kSlurmProcid = "SLURM_PROCID";
inline constexpr const char* kSlurmRestartCount = "SLURM_RESTART_COUNT";
// sbatch reads these as --requeue / --no-requeue (launcher/requeue/requeue_asked.hpp).
inline constexpr const char* kSbatchRequeue = "SBATCH_REQUEUE";
inline constexpr const char* kSbatchNoRequeue = "SBATCH_NO_REQUEUE";
inline constexpr const char* kSlurmStepid = "SLURM_STEPID";
inline constexpr const char* kSlurmStepId = "SLURM_STEP_ID";
inline constexpr const char* kSlurmStepGpus = "SLURM_STEP_GPUS";
inline constexpr const char* kSlurmStepNodelist = "SLURM_STEP_NODELIST";
inline constexpr const char* kSlurmStepNumNodes = "SLURM_STEP_NUM_NODES";
inline constexpr const char* kSlurmStepNumTasks = "SLURM_STEP_NUM_TASKS";
inline constexpr const char* kSlurmStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE";
inline constexpr const char* kSlurmTasksPerNode = "SLURM_TASKS_PER_NODE";
inline constexpr const char* kSlurmTopologyAddr = "SLURM_TOPOLOGY_ADDR";
inline constexpr const char* kSlurmTopologyAddrPattern = "SLURM_TOPOLOGY_ADDR_PATTERN";
inline constexpr const char* kSlurmGpuBind = "SLURM_GPU_BIND";
inline constexpr const char* kSlurmLaunchNodeIpaddr = "SLURM_LAUNCH_NODE_IPADDR";
inline constexpr const char* kSlurmSrunCommHost = "SLURM_SRUN_COMM_HOST";
inline constexpr const char* kSlurmSrunCommPort = "SLURM_SRUN_COMM_PORT";
inline constexpr const char* kSlurmStepLauncherPort = "SLURM_STEP_LAUNCHER_PORT";
inline constexpr const char* kSlurmTresBind = "SLURM_TRES_BIND";

// Set by other launchers (torchrun, Open MPI, Kubeflow), read by the launcher's rank sources.
inline constexpr const char* kOmpiCommWorldLocalRank = "OMPI_COMM_WORLD_LOCAL_RANK";
inline constexpr const char* kOmpiCommWorldLocalSize = "OMPI_COMM_WORLD_LOCAL_SIZE";
inline constexpr const char* kOmpiCommWorldNodeRank = "OMPI_COMM_WORLD_NODE_RANK";
inline constexpr const char* kOmpiCommWorldRank = "OMPI_COMM_WORLD_RANK";
inline constexpr const char* kOmpiCommWorldSize = "OMPI_COMM_WORLD_SIZE";
inline constexpr const char* kPetMasterAddr = "PET_MASTER_ADDR";
inline constexpr const char* kPetMasterPort = "PET_MASTER_PORT";
inline constexpr const char* kPetNnodes = "PET_NNODES";
inline constexpr const char* kPetNodeRank = "PET_NODE_RANK";
inline constexpr const char* kPetNprocPerNode = "PET_NPROC_PER_NODE";

// Read from the system.
inline constexpr const char* kTmpdir = "TMPDIR";

}  // namespace gputopo::env
