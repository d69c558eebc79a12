#!/usr/bin/env bash
# One binding path: the same jobs bound by the plugin (srun --gpu-topo=closest)
# and by gputopo-launch alone (plugstack.conf without the plugin), compared
# task by task: GPUs, CPUs, memory nodes, NICs, CUDA/ROCR_VISIBLE_DEVICES,
# NCCL_IB_HCA, UCX_NET_DEVICES, the CPUs the task really runs on and its real
# memory policy. Shapes include --gpus-per-task=1 and 2, where Slurm narrows
# each task's variables before the launcher starts. Also: the node name comes
# from Slurm, not from a SLURMD_NODENAME the user exported (audit finding 6);
# a user value over 4 KiB is kept (finding 13); memory is preferred, not
# bound, unless `membind` (checked on n1, this host's CPUs and NUMA node 0).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || { echo "not ok - binding equal: cluster"; exit 1; }
tap_plan 15
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/binding-equal.$$
mkdir -p "$w"
fails=0
fail() { tap_not_ok "$@"; fails=$((fails + 1)); }

# The task's real memory policy: get_mempolicy(2) through python's ctypes.
cat > "$w/mpol.py" <<'PY'
import ctypes, platform
nr = {"x86_64": 239, "aarch64": 236, "ppc64le": 260}.get(platform.machine(), 239)
libc = ctypes.CDLL(None, use_errno=True)
mode = ctypes.c_int(-1)
mask = (ctypes.c_ulong * 16)()
rc = libc.syscall(nr, ctypes.byref(mode), mask, ctypes.c_ulong(16 * 64), None, ctypes.c_ulong(0))
names = {0: "default", 1: "preferred", 2: "bind", 3: "interleave", 4: "local", 5: "preferred_many"}
nodes = [str(i) for i in range(16 * 64) if mask[i // 64] >> (i % 64) & 1]
print("mpol=%s:%s" % (names.get(mode.value, str(mode.value)) if rc == 0 else "error", ",".join(nodes)))
PY
vars='GPUTOPO_MODE GPUTOPO_GPUS GPUTOPO_CPUS GPUTOPO_MEMS GPUTOPO_NIC CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES NCCL_IB_HCA UCX_NET_DEVICES'
cat > "$w/dump.sh" <<EOS
#!/bin/bash
for v in $vars; do printf '%s=%s ' \$v "\${!v}"; done
printf '%s ' "\$(grep Cpus_allowed_list /proc/self/status | tr -d '\t ')"
python3 $w/mpol.py
EOS
chmod +x "$w/dump.sh"

# run_both TAG NAME GPU_TOPO SRUN_ARGS...: the plugin's and the launcher's bindings, sorted by
# task, in $w/TAG.plugin and $w/TAG.launcher.
run_both() {
    local tag=$1 name=$2 topo=$3
    shift 3
    plugstack_default
    timeout 60 srun "$@" --gpu-topo="$topo" -l "$w/dump.sh" 2>"$w/$tag.plugin.err" | sort > "$w/$tag.plugin"
    plugstack_set_line ""
    timeout 60 srun "$@" -l "$L" --gpu-topo "$topo" --topology "$CLUSTER_DIR/topo/%n.xml" -- "$w/dump.sh" \
        2>"$w/$tag.launcher.err" | sort > "$w/$tag.launcher"
    plugstack_default
    local want=$(( $(grep -c . "$w/$tag.plugin") ))
    if [ "$want" -gt 0 ] && ! grep -q 'GPUTOPO_GPUS= ' "$w/$tag.plugin" && cmp -s "$w/$tag.plugin" "$w/$tag.launcher"; then
        tap_ok "plugin = launcher: $name ($want tasks)"
    else
        fail "plugin = launcher: $name" "plugin:" "$(cat "$w/$tag.plugin" "$w/$tag.plugin.err")" \
            "launcher:" "$(cat "$w/$tag.launcher" "$w/$tag.launcher.err")"
    fi
}

run_both s1 "n3 XE8640, 4 tasks, --gpus-per-node=4" closest -w n3 -N1 -n4 --gpus-per-node=4
run_both s2 "n3 XE8640, 4 tasks, --gpus-per-task=1" closest -w n3 -N1 -n4 --gpus-per-task=1
run_both s3 "n3 XE8640, 2 tasks, --gpus-per-task=2" closest -w n3 -N1 -n2 --gpus-per-task=2
run_both s4 "n2 H100x8, 8 tasks, --gpus-per-task=1, island" island -w n2 -N1 -n8 --gpus-per-task=1
run_both s5 "n2 H100x8, 4 tasks, --gpus-per-task=2" closest -w n2 -N1 -n4 --gpus-per-task=2
run_both s6 "n2 H100x8, 4 tasks on 8 GPUs, isolate" closest,isolate -w n2 -N1 -n4 --gpus-per-node=8
run_both s7 "n4 MI250X, 8 tasks, --gpus-per-task=1" closest -w n4 -N1 -n8 --gpus-per-task=1
# Two nodes, each step holding the node's GPUs: under ConstrainDevices the launcher alone
# learns a task's physical GPUs only so (t_cgroup_binding.sh: part of a node).
run_both s8 "n2+n4, 4 tasks, --gpus-per-task=4" closest -w n2,n4 -N2 -n4 --ntasks-per-node=2 --gpus-per-task=4
run_both n1 "n1 this host, 2 tasks, --gpus-per-task=1 (real affinity)" closest -w n1 -N1 -n2 --gpus-per-task=1
run_both membind "n1 this host, 2 tasks, membind" closest,membind -w n1 -N1 -n2 --gpus-per-node=2

# strict: both fail the same step where the topology's CPUs are not this host's (n2).
plugstack_default
timeout 60 srun -w n2 -N1 -n1 --gpus-per-task=1 --gpu-topo=closest,strict true > "$w/strict.plugin" 2>&1
prc=$?
plugstack_set_line ""
timeout 60 srun -w n2 -N1 -n1 --gpus-per-task=1 "$L" --gpu-topo closest,strict --topology "$CLUSTER_DIR/topo/%n.xml" \
    -- true > "$w/strict.launcher" 2>&1
lrc=$?
plugstack_default
if [ "$prc" -ne 0 ] && [ "$lrc" -ne 0 ] && grep -q "are not this host's (strict" "$w/strict.plugin" &&
   grep -q "are not this host's (strict" "$w/strict.launcher"; then
    tap_ok "strict: plugin and launcher both fail the step when the binding cannot be applied"
else
    fail "strict: plugin and launcher both fail" "plugin rc=$prc: $(cat "$w/strict.plugin")" \
        "launcher rc=$lrc: $(cat "$w/strict.launcher")"
fi

# Memory policy on n1 (real NUMA node 0): preferred by default, bind with membind.
if [ "$(grep -c 'mpol=preferred:0$' "$w/n1.plugin")" = 2 ] && [ "$(grep -c 'mpol=bind:0$' "$w/membind.plugin")" = 2 ] &&
   [ "$(grep -c 'mpol=preferred:0$' "$w/n1.launcher")" = 2 ]; then
    tap_ok "memory policy: preferred on the GPU's NUMA node by default, bind only with membind"
else
    fail "memory policy: preferred by default, bind with membind" "$(cat "$w/n1.plugin" "$w/n1.launcher" "$w/membind.plugin")"
fi

# Finding 6: a SLURMD_NODENAME the user exports does not choose the topology file.
plugstack_default
timeout 60 srun -w n3 -N1 -n4 --gpus-per-node=4 --gpu-topo=closest -l "$w/dump.sh" 2>/dev/null | sort > "$w/n6.plain"
SLURMD_NODENAME=n2 timeout 60 srun -w n3 -N1 -n4 --gpus-per-node=4 --gpu-topo=closest -l "$w/dump.sh" 2>"$w/n6.err" |
    sort > "$w/n6.spoofed"
if [ -s "$w/n6.plain" ] && grep -q 'GPUTOPO_GPUS=[0-9]' "$w/n6.plain" && cmp -s "$w/n6.plain" "$w/n6.spoofed"; then
    tap_ok "node name from Slurm: SLURMD_NODENAME=n2 exported by the user does not change n3's binding"
else
    fail "node name from Slurm, not the user's SLURMD_NODENAME" "plain:" "$(cat "$w/n6.plain")" \
        "spoofed:" "$(cat "$w/n6.spoofed" "$w/n6.err")"
fi

# The same with cache= (the root read in init_post_opt): the file root opens is
# named by slurmstepd's environment or the host, never by the job's.
mkdir -p "$w/cache"
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml" "cache=$w/cache"
SLURMD_NODENAME=n2 timeout 60 srun -w n3 -N1 -n4 --gpus-per-node=4 --gpu-topo=closest -l "$w/dump.sh" 2>"$w/n6c.err" |
    sort > "$w/n6c.spoofed"
plugstack_default
if [ -s "$w/n6.plain" ] && cmp -s "$w/n6.plain" "$w/n6c.spoofed" && ! ls "$w/cache" | grep -q n2; then
    tap_ok "node name from Slurm with cache=: root never reads the topology a user's SLURMD_NODENAME names"
else
    fail "node name from Slurm with cache=" "plain:" "$(cat "$w/n6.plain")" "spoofed:" \
        "$(cat "$w/n6c.spoofed" "$w/n6c.err")" "cache: $(ls "$w/cache")"
fi

# Finding 13: a user value over 4 KiB is the user's, not taken as unset.
big="=$(printf 'mlx5_%d,' $(seq 0 999) | head -c 5000)"
EXPECT=$big NCCL_IB_HCA=$big timeout 60 srun -w n3 -N1 -n1 --gpus-per-node=4 --gpu-topo=closest \
    bash -c '[ "$NCCL_IB_HCA" = "$EXPECT" ] && [ -n "$GPUTOPO_GPUS" ] && echo kept' > "$w/big" 2>"$w/big.err"
if [ "$(cat "$w/big")" = kept ]; then
    tap_ok "a user's NCCL_IB_HCA of 5000 bytes is kept (values over 4 KiB are read whole)"
else
    fail "a user's 5000-byte NCCL_IB_HCA is kept" "$(head -c 400 "$w/big" "$w/big.err")"
fi
[ "$fails" -eq 0 ]
