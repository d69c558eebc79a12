#!/usr/bin/env bash
# `make demo`: starts a local Slurm cluster on loopback whose 4 nodes carry
# shipped example topologies (tests/cluster/harness.sh), runs
# `srun --gpu-topo=island,verbose` jobs that print the binding table, stops it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
. "$here/harness.sh"
cluster_start "$build" || exit 1

show() {  # show TITLE SRUN-ARGS...
    echo
    echo "== $1"
    shift
    echo "\$ srun $*"
    srun "$@" 2>&1 | grep '^gputopo:' | sort -t' ' -k2,2 -k4,4n
}

echo "gputopo demo: a 4-node Slurm cluster on this host (run dir $CLUSTER_DIR)"
echo "  n1: this host's CPUs with 2 example GPUs   n2: OCI BM.GPU.H100.8 (8x H100, NCCL dump)"
echo "  n3: Dell XE8640 (4x H100, hwloc)          n4: HPE Cray EX235a Tioga (8 MI250X GCDs, hwloc)"
echo "  (CPU affinity is applied only on n1; the other machines' CPUs do not exist here)"
show "8 tasks, one H100 each, island mode, on the HGX node" \
    -w n2 -N1 -n8 --gpus-per-task=1 --gpu-topo=island,verbose true
show "4 tasks with 2 GPUs each on the HGX node" \
    -w n2 -N1 -n4 --gpus-per-task=2 --gpu-topo=island,verbose true
show "2 nodes under one switch, NVIDIA and AMD, 4 tasks each" \
    -w n3,n4 -N2 -n8 --ntasks-per-node=4 --gpus-per-task=1 --gpu-topo=island,verbose true
echo
echo "== what a task sees (n1, real affinity)"
srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest bash -c \
    'echo "task $SLURM_LOCALID: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES GPUTOPO_GPUS=$GPUTOPO_GPUS GPUTOPO_CPUS=$GPUTOPO_CPUS NCCL_IB_HCA=$NCCL_IB_HCA UCX_NET_DEVICES=$UCX_NET_DEVICES $(grep Cpus_allowed_list /proc/self/status | tr -d "\t")"' | sort
cluster_stop
