#!/usr/bin/env bash
# End-to-end: srun --gpu-topo on the local cluster; every task's environment
# (CUDA_VISIBLE_DEVICES, GPUTOPO_*, NCCL_IB_HCA, UCX_NET_DEVICES) and, on n1
# (this host's real CPUs), Cpus_allowed_list, against `gputopo plan`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 18
cluster_ensure "${1:-build}" || { echo "not ok - plugin env: cluster"; exit 1; }

out=$CLUSTER_DIR/tmp/env.$$
fails=0

# case NAME CHECKER-ARGS -- SRUN-ARGS
case_srun() {
    local name=$1 checks=() a
    shift
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do checks+=("$1"); shift; done
    shift
    local t0=$SECONDS
    if ! timeout 120 srun "$@" "$here/probe.sh" > "$out" 2> "$out.err"; then
        tap_not_ok "$name" "srun $* failed: $(tail -n 3 "$out.err")"
        fails=$((fails + 1))
        return
    fi
    python3 "$here/check_binding.py" "$name" "$out" --gputopo "$CLUSTER_BUILD/gputopo" \
        --topo-dir "$CLUSTER_DIR/topo" --real n1 --amd n4 "${checks[@]}" || fails=$((fails + 1))
    echo "#   $((SECONDS - t0))s"
}

case_srun "srun island, 1 GPU per task, 8 tasks on the 8-GPU HGX node (n2)" --mode island --expect-tasks 8 -- \
    -w n2 -N1 -n8 --gpus-per-task=1 --gpu-topo=island
case_srun "srun closest, 1 GPU per task, 4 tasks on the XE8640 (n3)" --mode closest --expect-tasks 4 -- \
    -w n3 -N1 -n4 --gpus-per-task=1 --gpu-topo=closest
case_srun "srun island, 2 GPUs per task (--gpus-per-task=2) isolate by default (n2)" --mode island --expect-tasks 4 -- \
    -w n2 -N1 -n4 --gpus-per-task=2 --gpu-topo=island
case_srun "srun island, --gpus-per-node=4 with 2 tasks: 2 GPUs each (n3)" --mode island --expect-tasks 2 -- \
    -w n3 -N1 -n2 --gpus-per-node=4 --gpu-topo=island
case_srun "srun closest, --gpus-per-node=8, 8 tasks share all GPUs (n2)" --mode closest --expect-tasks 8 -- \
    -w n2 -N1 -n8 --gpus-per-node=8 --gpu-topo=closest
case_srun "srun island,share: 2 GPUs per task, all visible (n2)" --mode island --share --expect-tasks 4 -- \
    -w n2 -N1 -n4 --gpus-per-task=2 --gpu-topo=island,share
case_srun "srun closest,isolate: each task sees only its GPU (n3)" --mode closest --isolate --expect-tasks 4 -- \
    -w n3 -N1 -n4 --gpus-per-task=1 --gpu-topo=closest,isolate
case_srun "srun island on the AMD MI250X node: ROCR_VISIBLE_DEVICES (n4)" --mode island --expect-tasks 8 -- \
    -w n4 -N1 -n8 --gpus-per-task=1 --gpu-topo=island
case_srun "srun closest on this host's CPUs: real Cpus_allowed_list (n1)" --mode closest --expect-tasks 2 -- \
    -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest
case_srun "srun island,isolate on this host's CPUs (n1)" --mode island --isolate --expect-tasks 2 -- \
    -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=island,isolate
# island asks job_submit.lua for one leaf switch: n3,n4 share leaf2.
case_srun "srun island across 2 nodes of one switch, NVIDIA and AMD, 4 tasks each (n3,n4)" --mode island --expect-tasks 8 -- \
    -w n3,n4 -N2 -n8 --ntasks-per-node=4 --gpus-per-task=1 --gpu-topo=island
case_srun "srun closest across all 4 nodes, --gpus-per-node=2, 2 tasks per node" --mode closest --expect-tasks 8 -- \
    -N4 -n8 --ntasks-per-node=2 --gpus-per-node=2 --gpu-topo=closest

# cache=DIR: the first step writes each topology's snapshot, the next ones read it.
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml cache=$CLUSTER_DIR/cache"
case_srun "cache=: first step (snapshot written), n2+n1" --mode island --expect-tasks 4 -- \
    -w n1,n2 -N2 -n4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=island
case_srun "cache=: second step reads the snapshots and binds the same" --mode island --expect-tasks 4 -- \
    -w n1,n2 -N2 -n4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=island
name="cache=: one snapshot per topology file in the cache directory"
if [ "$(ls "$CLUSTER_DIR"/cache/topo-*n1.xml.snap "$CLUSTER_DIR"/cache/topo-*n2.xml.snap 2>/dev/null | wc -l)" = 2 ]; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(ls "$CLUSTER_DIR/cache")"; fails=$((fails + 1))
fi
plugstack_default

# verbose: one line per task, in the documented form.
name="verbose prints one binding line per task on the user's stderr"
if timeout 60 srun -w n3 -N1 -n4 --gpus-per-task=1 --gpu-topo=island,verbose true > "$out" 2> "$out.err" &&
   [ "$(grep -cE '^gputopo: n3 task [0-3]: gpus=[0-3] \(0000:[0-9a-f:.]+\) cpus=[0-9,-]+ mems=[0-9,]+ nic=[a-z0-9_]+ island=[0-9]+' "$out.err")" = 4 ]; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(head -n 5 "$out.err")"; fails=$((fails + 1))
fi

# A variable the user set is kept, and verbose says so.
name="a user's NCCL_IB_HCA and UCX_NET_DEVICES are left alone (verbose says so)"
if NCCL_IB_HCA=mlx5_9 UCX_NET_DEVICES=mlx5_9:1 timeout 60 srun -w n2 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest,verbose \
       "$here/probe.sh" > "$out" 2> "$out.err" &&
   [ "$(grep -c ' NCCL_IB_HCA=mlx5_9 ' "$out")" = 2 ] && [ "$(grep -c ' UCX_NET_DEVICES=mlx5_9:1 ' "$out")" = 2 ] &&
   [ "$(grep -c "kept user's NCCL_IB_HCA=mlx5_9" "$out.err")" = 2 ] && [ "$(grep -c ' GPUTOPO_CPUS=' "$out")" = 2 ]; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(head -c 600 "$out") $(head -n 3 "$out.err")"; fails=$((fails + 1))
fi

# No option and default=none: gputopo stays out entirely.
name="without --gpu-topo (default none) no GPUTOPO_ variable is set and Slurm's CUDA_VISIBLE_DEVICES stays"
if timeout 60 srun -w n3 -N1 -n4 --gpus-per-task=1 "$here/probe.sh" > "$out" 2> "$out.err" &&
   ! grep -qE ' GPUTOPO_(MODE|GPUS|CPUS)=' "$out" && [ "$(grep -cE ' CUDA_VISIBLE_DEVICES=[0-3] ' "$out")" = 4 ] && ! grep -q gputopo "$out.err"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(head -c 400 "$out") $(head -n 3 "$out.err")"; fails=$((fails + 1))
fi

rm -f "$out" "$out.err"
[ "$fails" -eq 0 ]
