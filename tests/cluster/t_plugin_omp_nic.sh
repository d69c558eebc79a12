#!/usr/bin/env bash
# Issue 21 (part A) on the cluster: every task really gets OMP_NUM_THREADS,
# OMP_PLACES and OMP_PROC_BIND matching the CPUs the kernel gives it (n1: this
# host's real CPUs), the user's value is kept, and the site's NIC policy
# (plugstack.conf nic_exclude=) removes a NIC from NCCL_IB_HCA and
# UCX_NET_DEVICES; a malformed policy is refused with one message naming it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 5
build=${1:-build}
cluster_ensure "$build" || { echo "not ok - plugin OMP/NIC policy: cluster"; exit 1; }
plugstack_default

out=$CLUSTER_DIR/tmp/ompnic.$$
result() {  # result NAME EXIT-CODE DETAILS
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fi
}
# One short line per task: what it got and what the kernel says it may run on.
task='echo "T $SLURM_LOCALID omp=${OMP_NUM_THREADS-} places=${OMP_PLACES-} bind=${OMP_PROC_BIND-}'\
' hca=${NCCL_IB_HCA-} ucx=${UCX_NET_DEVICES-} cpus=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'

# Every task: places are exactly its CPUs, one thread per place, bound close.
check_omp() {  # check_omp FILE NTASKS
    python3 - "$1" "$2" <<'PY'
import re, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("T ")]
def cpus(s):
    out = set()
    for r in s.split(","):
        if r:
            a, _, b = r.partition("-")
            out |= set(range(int(a), int(b or a) + 1))
    return out
if len(lines) != int(sys.argv[2]):
    sys.exit("expected %s task lines, got %d" % (sys.argv[2], len(lines)))
for l in lines:
    f = dict(kv.split("=", 1) for kv in l.split()[2:])
    places = re.findall(r"\{([0-9,]+)\}", f["places"])
    union = set()
    for p in places:
        union |= cpus(p)
    if not places or union != cpus(f["cpus"]) or f["omp"] != str(len(places)) or f["bind"] != "close":
        sys.exit("task line does not match its CPUs: " + l.strip())
PY
}

with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest bash -c "$task" > "$out" 2>&1
rc=$?
msg=$(check_omp "$out" 2 2>&1)
result "each task's OMP_PLACES are the CPUs it really has, OMP_NUM_THREADS one per place" $? "rc=$rc $msg $(head -n 6 "$out")"

OMP_NUM_THREADS=7 with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest bash -c "$task" > "$out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^T .* omp=7 ' "$out")" = 2 ]
result "the user's OMP_NUM_THREADS is kept" $? "rc=$rc $(head -n 6 "$out")"

# Without a policy, task 0's nearest NIC is mlx5_0 and NCCL_IB_HCA lists both.
with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest bash -c "$task" > "$out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q '^T 0 .* hca==mlx5_0,mlx5_1 ucx=mlx5_0:1 ' "$out"
result "without a NIC policy both NICs are used (the check below can fail)" $? "rc=$rc $(head -n 6 "$out")"

plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml nic_exclude=mlx5_0"
with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest bash -c "$task" > "$out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^T [01] .* hca==mlx5_1 ucx=mlx5_1:1 ' "$out")" = 2 ] && ! grep -q 'mlx5_0' "$out"
result "nic_exclude=mlx5_0: no task's NCCL_IB_HCA or UCX_NET_DEVICES names mlx5_0" $? "rc=$rc $(head -n 6 "$out")"

plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml nic_exclude=mlx5_0,,mlx5_1"
with_timeout 60 srun -w n1 -N1 -n1 --gpus-per-task=1 --gpu-topo=closest bash -c "$task" > "$out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q 'nic_exclude=mlx5_0,,mlx5_1: empty name' "$out" "$CLUSTER_DIR"/log/slurmd-n1.log 2>/dev/null
result "a malformed nic_exclude= is one message naming it; the job still runs" $? "rc=$rc $(head -n 6 "$out")"
plugstack_default
rm -f "$out"
