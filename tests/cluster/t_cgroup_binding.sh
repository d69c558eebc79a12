#!/usr/bin/env bash
# What each task really has under the configuration production sites run
# (task/affinity,task/cgroup + proctrack/cgroup + ConstrainCores/Devices/RAMSpace; the
# harness runs it by default where the kernel allows; GPUTOPO_CLUSTER_CGROUP=v2-devices: Slurm's
# cgroup/v2 devices, cores by task/affinity alone): the GPU devices it can open, the
# GPUs its program's devices really are, Cpus_allowed_list, get_mempolicy (task-view,
# check_view.py). Under task/none the same cases run with what that configuration
# gives (every task opens every GPU); the checks that need device cgroups say so.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || exit 1
tap_plan 27

w=$(mktemp -d "$CLUSTER_DIR/tmp/cgroup.XXXXXX")
cg=0
[ "$CLUSTER_TASK_CONFIG" = cgroup ] && cg=1
echo "# Slurm configuration: $(cluster_config_line)"
running=$(sbatch --version | awk '{print $2}')

# check NAME NTASKS CHECK-ARGS... -- SRUN-ARGS...
check() {
    local name=$1 n=$2 args=()
    shift 2
    while [ "$1" != "--" ]; do args+=("$1"); shift; done
    shift
    if ! with_timeout 90 srun "$@" "$here/view.sh" > "$w/out" 2> "$w/err"; then
        # What the node's slurmd and slurmstepd said ("Task launch failed" alone names no cause).
        local node
        node=$(printf '%s\n' "$@" | sed -n '/^-w$/{n;p;q}')
        tap_not_ok "$name" "srun $* failed: $(tail -n 3 "$w/err") | slurmd-$node.log: $(grep -i 'error' "$CLUSTER_DIR/log/slurmd-$node.log" 2>/dev/null | tail -n 4)"
        return
    fi
    python3 "$here/check_view.py" "$name" "$w/out" --tasks "$n" "${args[@]}"
}
# only_cgroup ARGS...: the arguments when devices are constrained, nothing otherwise.
only_cgroup() { [ "$cg" = 1 ] && printf '%s\n' "$@"; }
mapfile -t k2 < <(only_cgroup --opens 2 --disjoint)
mapfile -t k1 < <(only_cgroup --opens 1 --disjoint)
# One GPU per task: its own device cgroup isolates it; without one gputopo's shared view
# (every task sees the step's GPUs, its own first) is the default.
mapfile -t iso1 < <(only_cgroup --isolated)
# --cpu-bind=map_cpu is applied by task/affinity; under task/none nothing applies it.
map_cpus="1;0"
[ "$cg" = 1 ] || map_cpus="0-1;0-1"

check "gpus-per-task=2: each task's program devices are the two GPUs it can open (n2)" 2 --isolated "${k2[@]}" \
    -- -w n2 -n2 --gpus-per-task=2 --gpu-topo=closest
check "gpus-per-task=1, isolate: one GPU each, its own (n2)" 4 --isolated "${k1[@]}" \
    -- -w n2 -n4 --gpus-per-task=1 --gpu-topo=closest,isolate
check "gpus-per-task=1, share: each task's devices are GPUs it can open (n2)" 2 "${k1[@]}" \
    -- -w n2 -n2 --gpus-per-task=1 --gpu-topo=closest,share
if [ "$cg" = 1 ]; then
    # The way out the release has: --gres-flags=allow-task-sharing from 23.11, else --gpus-per-node.
    if [ "$(printf '%s\n%s\n' "$running" 23.11 | sort -V | head -n 1)" = 23.11 ]; then
        way='gres-flags=allow-task-sharing (Slurm 23.11+)'
    else
        way='gpus-per-node with --ntasks-per-node'
    fi
    with_timeout 60 srun -w n2 -n2 --gpus-per-task=1 --gpu-topo=closest,share /bin/true > "$w/out" 2>&1
    n=$(grep -c 'share is not possible here' "$w/out")
    tap_check "share under per-task device cgroups: said once per node, pointing to --$way (Slurm $running)" \
        test "$n" = 1 -a "$(grep -cF -- "--$way" "$w/out")" = 1
else
    with_timeout 60 srun -w n2 -n2 --gpus-per-task=1 --gpu-topo=closest,share /bin/true > "$w/out" 2>&1
    tap_check "share without device cgroups (task/none): nothing says it is impossible" \
        test "$(grep -c 'share is not possible here' "$w/out")" = 0
fi
# Which cgroup each task is in: Slurm's own per-task one (v1: the devices hierarchy's task_N;
# cgroup/v2, GPUTOPO_CLUSTER_CGROUP=v2-devices: the 0:: line's task_N, what its BPF device program
# is attached to).
if [ "$cg" = 1 ]; then
    [ "${CLUSTER_CGROUP_VERSION:-v1}" = v2 ] && line='^0::' || line='^[0-9]*:devices:'
    # The harness's view of /proc/<pid>/cgroup (v2) is the daemons' alone: no LD_PRELOAD in a task.
    with_timeout 60 srun -w n2 -n2 --gpus-per-task=1 --gpu-topo=closest \
        sh -c 'echo "CG $SLURM_LOCALID $(grep "$1" /proc/self/cgroup)${LD_PRELOAD:+ LD_PRELOAD=$LD_PRELOAD}"' sh "$line" \
        > "$w/out" 2> "$w/err"
    tap_check "each task in Slurm's own task cgroup (cgroup ${CLUSTER_CGROUP_VERSION:-v1}: $line.../task_N), nothing preloaded" \
        test "$(grep -cE '^CG ([01]) .*/task_\1$' "$w/out")" = 2
else
    tap_ok "each task in Slurm's own task cgroup: no cgroups here (task/none) # SKIP"
fi
check "gpus-per-node=4: every task opens the step's four GPUs, its devices among them (n2)" 2 --same \
    $(only_cgroup --opens 4) -- -w n2 -N1 -n2 --gpus-per-node=4 --gpu-topo=closest
check "gpus=4 across 2 tasks: the step's GPUs (n2)" 2 --same $(only_cgroup --opens 4) \
    -- -w n2 -n2 --gpus=4 --gpu-topo=closest
check "gpu-bind=map_gpu:3,2 kept: task 0 uses GPU 3, task 1 GPU 2, named so (n2)" 2 --isolated \
    --physical "0:3;1:2" "${k1[@]}" -- -w n2 -n2 --gpus=4 --gpu-bind=map_gpu:3,2 --gpu-topo=closest
check "gpu-bind=mask_gpu:0x3,0xc kept: two GPUs each, named so (n2)" 2 --isolated "${k2[@]}" \
    -- -w n2 -n2 --gpus=4 --gpu-bind=mask_gpu:0x3,0xc --gpu-topo=closest
check "gpu-bind=single:1: one GPU each, named so (n1)" 2 --isolated "${k1[@]}" \
    -- -w n1 -n2 --gpus=2 --gpu-bind=single:1 --gpu-topo=closest
check "gpu-bind=closest: the task's devices are GPUs it can open (n1)" 2 \
    -- -w n1 -n2 --gpus=2 --gpu-bind=closest --gpu-topo=closest
check "--gres-flags=enforce-binding: one GPU each, named so (n1)" 2 "${iso1[@]}" "${k1[@]}" \
    -- -w n1 -n2 --gpus-per-task=1 --gres-flags=enforce-binding --gpu-topo=closest
check "AMD (n4): ROCR_VISIBLE_DEVICES counts the task's own GPUs, named so" 2 --isolated "${k2[@]}" \
    -- -w n4 -n2 --gpus-per-task=2 --gpu-topo=closest

# CPUs and memory, on n1 (this host's real CPUs: 2 GPUs, every CPU local to both).
if [ "$(nproc)" -ge 2 ]; then
    check "CPUs: one each, memory preferred on their NUMA node (n1)" 2 "${iso1[@]}" --cpus "0;1" \
        --mempolicy preferred:0 -- -w n1 -n2 --gpus-per-task=1 --gpu-topo=closest
    check "cpu-bind=map_cpu:1,0 kept, memory still on its NUMA node (n1)" 2 --cpus "$map_cpus" --mempolicy preferred:0 \
        -- -w n1 -n2 --gpus-per-task=1 --cpu-bind=map_cpu:1,0 --gpu-topo=closest
    check "cpu-bind=none: no affinity, no memory policy (n1)" 2 --cpus "0-1;0-1" --mempolicy default:- \
        -- -w n1 -n2 --gpus-per-task=1 --cpu-bind=none --gpu-topo=closest
    check "-c 2: the task gets both CPUs (n1)" 1 --cpus "0-1" --mempolicy preferred:0 \
        -- -w n1 -n1 -c2 --gpus-per-task=1 --gpu-topo=closest
else
    for c in "CPUs" "cpu-bind=map_cpu" "cpu-bind=none" "-c 2"; do tap_not_ok "$c: this host has fewer than 2 CPUs"; done
fi

# A partial node: another job holds 3 of n2's GPUs.
other=$(sbatch --parsable -w n2 -n1 --gpus=3 -o /dev/null --wrap 'sleep 60' 2>/dev/null)
wait_job_state "$other" RUNNING 30 >/dev/null 2>&1
held=$(job_field "$other" JobState)
check "a partial node (another job holds 3 GPUs): tasks use only the step's GPUs (n2)" 2 --isolated "${k2[@]}" \
    $(only_cgroup --never-open 0,1,2) -- -w n2 -n2 --gpus-per-task=2 --gpu-topo=closest
[ -n "$other" ] && scancel "$other" 2>/dev/null
[ "$held" = RUNNING ] || echo "# the other job was $held, not RUNNING" >&2

# sbatch + srun, and the launcher alone and under the plugin.
cat > "$w/batch.sh" <<EOF
#!/bin/bash
srun "$here/view.sh"
EOF
job=$(sbatch --parsable -w n2 -n2 --gpus-per-task=2 --gpu-topo=closest -o "$w/batch.out" "$w/batch.sh")
wait_job_state "$job" COMPLETED 60 >/dev/null 2>&1
python3 "$here/check_view.py" "sbatch --gpu-topo + srun: each task's devices its own (n2)" "$w/batch.out" --tasks 2 \
    --isolated "${k2[@]}"
plugstack_set_line ""
check "gputopo-launch alone, the step holds the node's GPUs: each task's devices its own, named so (n3)" 2 \
    --isolated "${k2[@]}" \
    -- -w n3 -n2 --gpus-per-task=2 "$CLUSTER_BUILD/gputopo-launch" --topology "$CLUSTER_DIR/topo/%n.xml" --
if [ "$cg" = 1 ]; then
    # Part of n2's GPUs, no plugin: nothing names the physical GPUs; one note, the tasks run.
    with_timeout 60 srun -w n2 -n2 --gpus-per-task=2 "$CLUSTER_BUILD/gputopo-launch" \
        --topology "$CLUSTER_DIR/topo/%n.xml" -- "$here/view.sh" > "$w/out" 2> "$w/err"
    tap_check "gputopo-launch alone on part of a node's GPUs: one clear note, tasks run unbound with Slurm's devices" \
        test "$(grep -c '^TASK .*gpus=unset' "$w/out")" = 2 -a "$(grep -c 'only the gputopo plugin in the step can say' "$w/err")" -ge 1
else
    check "gputopo-launch alone on part of a node's GPUs: the task's own variables name its GPUs (task/none)" 2 \
        --isolated -- -w n2 -n2 --gpus-per-task=2 "$CLUSTER_BUILD/gputopo-launch" --topology "$CLUSTER_DIR/topo/%n.xml" --
fi
check "gputopo-launch --devices: it counts the GPU files its task can open; its own cgroup, its own GPUs (n3)" 2 \
    --isolated "${k2[@]}" -- -w n3 -n2 --gpus-per-task=2 "$CLUSTER_BUILD/gputopo-launch" \
    --topology "$CLUSTER_DIR/topo/%n.xml" --devices "$CLUSTER_DIR/dev/%n" --
# devices=: each task counts, in task_init, the GPU files its devices cgroup lets it open (issue 32:
# a per-task cgroup opens only its own, so CUDA numbers them from 0; allow-task-sharing, 23.11+, opens
# the step's and is numbered in the step's set: unit test [allow-task-sharing]).
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml devices=$CLUSTER_DIR/dev/%n"
if [ "$cg" = 1 ]; then
    # What the count rests on: access(2) refuses what the devices cgroup denies (no open needed).
    with_timeout 60 srun -w n2 -n1 --gpus-per-task=1 python3 -c 'import os, sys
d = sys.argv[1]
print(sum(os.access(os.path.join(d, f), os.R_OK | os.W_OK) for f in os.listdir(d) if f.startswith("nvidia")))' \
        "$CLUSTER_DIR/dev/n2" > "$w/out" 2> "$w/err"
    tap_check "access(2) in a task: 1 of n2's 8 GPU files, as its devices cgroup allows" test "$(cat "$w/out")" = 1
else
    tap_ok "access(2) in a task: no device cgroups here (task/none), nothing to count # SKIP"
fi
check "devices=: tasks count the GPU files they can open; one GPU each, their own, isolated (n2)" 4 --isolated \
    "${k1[@]}" -- -w n2 -n4 --gpus-per-task=1 --gpu-topo=closest,isolate
# --gres-flags=allow-task-sharing (23.11+) with one GPU per task: every task can open the step's
# GPUs, so its program must number them in the step's set (issue 32: every task was given GPU 0):
# share, the step's GPUs with its own at position LOCAL_RANK; isolate, its own alone.
if [ "$(printf '%s\n%s\n' "$running" 23.11 | sort -V | head -n 1)" = 23.11 ]; then
    check "devices=, allow-task-sharing, gpus-per-task=1: each task opens the step's 4 GPUs, its own at LOCAL_RANK (n2)" 4 \
        --own-at local $(only_cgroup --same --opens 4) -- -w n2 -n4 --gpus-per-task=1 --gres-flags=allow-task-sharing --gpu-topo=closest
    check "devices=, allow-task-sharing, gpus-per-task=1, isolate: its own GPU alone, in the step's numbering (n2)" 4 \
        --own-at first --isolated $(only_cgroup --same --opens 4) \
        -- -w n2 -n4 --gpus-per-task=1 --gres-flags=allow-task-sharing --gpu-topo=closest,isolate
else
    tap_ok "allow-task-sharing: Slurm $running has no such flag (23.11+) # SKIP"
    tap_ok "allow-task-sharing, isolate: Slurm $running has no such flag (23.11+) # SKIP"
fi
plugstack_default
check "gputopo-launch under the plugin: the plugin's binding stands (n2)" 2 --isolated "${k2[@]}" \
    -- -w n2 -n2 --gpus-per-task=2 --gpu-topo=closest "$CLUSTER_BUILD/gputopo-launch" --
rm -rf "$w"
exit 0
