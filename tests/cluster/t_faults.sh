#!/usr/bin/env bash
# Fault injection on the local cluster. Each case checks the outcome that
# gputopo(8) and gputopo-launch(1) promise (a warning and unbound tasks, or
# with strict a failed step; the launcher's event log), and at the end no
# slurmstepd crashed (the slurmd logs of this run have no segfault/abort).
#  plugin:   a truncated topology (and strict); a memory policy the kernel
#            refuses (and strict); a file that is not XML with
#            strict; a broken islands file with strict; the cache directory a
#            symlink, on a full file system, read-only; cache= without
#            topology= (live discovery, then read while fresh and redone when
#            stale; on a full file system); NVML that never answers; the job's
#            HWLOC_* not reaching slurmstepd's discovery; all NICs down; more tasks than GPUs;
#            a step with no GPUs; a bad --gpu-topo reaching slurmstepd through
#            the job environment; batch steps left unbound;
#  launcher: SIGKILL during a checkpoint hook; the launcher itself killed.
# (Two requeue decisions racing: t_launcher_requeue.sh, per-node state dirs.
# GPU-index bombs in CUDA_VISIBLE_DEVICES cannot be set here: Slurm overwrites
# the variable on these GPU nodes; the unit tests of the step inputs cover them.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 23
started_here=${CLUSTER_DIR:-yes}
cluster_ensure "${1:-build}" || { echo "not ok - faults: cluster"; exit 1; }
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/faults.$$
mkdir -p "$w"
out=$w/out
topo3=$(node_topology n3)
result() {  # NAME EXIT-CODE DETAILS
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fi
}
run() {  # SRUN-ARGS...: the probe, stdout in $out, stderr in $out.err; returns srun's status
    with_timeout 60 srun "$@" "$here/probe.sh" > "$out" 2> "$out.err"
}
mounts=()
cleanup_mounts() { local m; for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done; }
# The mounts go in any case; the cluster only when this script started it.
if [ "$started_here" = yes ]; then trap 'cleanup_mounts; cluster_stop' EXIT; else trap cleanup_mounts EXIT; fi

# --- topology files
head -c 3000 "$topo3" > "$w/truncated.xml"
plugstack_set "topology=$w/truncated.xml"
run -w n3 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^PROBE' "$out")" = 2 ] && ! grep -q ' GPUTOPO_GPUS=' "$out" &&
    [ "$(grep -c "gputopo: n3: .*truncated.xml.*tasks run unbound" "$out.err")" = 1 ]
result "a truncated topology file: one warning naming it, tasks run unbound" $? "rc=$rc $(head -n 3 "$out.err")"
run -w n3 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest,strict
rc=$?
[ "$rc" -ne 0 ] && ! grep -q '^PROBE' "$out" && grep -q "truncated.xml.*(strict: the step fails)" "$out.err"
result "a truncated topology file with strict: the step fails with the message" $? "rc=$rc $(head -n 3 "$out.err")"

echo "not xml" > "$w/garbage.xml"
plugstack_set "topology=$w/garbage.xml"
run -w n2 -N1 -n1 --gpus-per-task=1 --gpu-topo=closest,strict
rc=$?
[ "$rc" -ne 0 ] && ! grep -q '^PROBE' "$out" && grep -q "garbage.xml.*(strict: the step fails)" "$out.err"
result "a topology file that is not XML, with strict: the step fails with the message" $? "rc=$rc $(head -n 3 "$out.err")"

printf 'Island=pod1 Nodes=n[1-2]\nIsland=pod2 Nodes=n[3-\n' > "$w/bad-islands.conf"
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml islands=$w/bad-islands.conf"
run -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=island,strict
rc=$?
[ "$rc" -ne 0 ] && ! grep -q '^PROBE' "$out" && grep -q "islands: .*(strict: the step fails)" "$out.err"
result "a broken islands file with strict: the step fails with the message" $? "rc=$rc $(head -n 3 "$out.err")"

# All NICs of n3 down: GPUs still bound, no NIC chosen for them from a down port.
sed 's/\(name="Port1State" value="\)4"/\11"/' "$topo3" > "$w/nics-down.xml"
plugstack_set "topology=$w/nics-down.xml"
run -w n3 -N1 -n4 --gpus-per-task=1 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c ' GPUTOPO_GPUS=' "$out")" = 4 ] && ! grep -q "$w/nics-down.xml" "$out.err" &&
    ! grep -qE ' (NCCL_IB_HCA|UCX_NET_DEVICES|GPUTOPO_NIC)=' "$out"
result "all NICs of a node down: tasks still bound to GPUs and CPUs, no NIC given (no NCCL_IB_HCA/UCX_NET_DEVICES)" $? "rc=$rc $(head -n 3 "$out.err") $(head -c 300 "$out")"

# A memory policy the kernel refuses: n1's real CPUs, but its GPUs on a NUMA
# node this host does not have. One note that says the CPUs were applied and the
# memory policy was not, tasks run; strict fails the step.
sed 's/numaid="0"/numaid="5"/' "$(node_topology n1)" > "$w/numa5.xml"
plugstack_set "topology=$w/numa5.xml"
run -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^PROBE' "$out")" = 2 ] && grep -q 'numaid="5"' "$w/numa5.xml" &&
    [ "$(grep -c 'CPUs [0-9,-]* applied; memory policy not applied: NUMA node 5 does not exist on this host' "$out.err")" = 1 ]
result "a memory policy the kernel cannot apply (NUMA node 5 absent): one note, tasks run" $? "rc=$rc $(head -n 3 "$out.err")"
run -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest,strict
rc=$?
[ "$rc" -ne 0 ] && ! grep -q '^PROBE' "$out" && grep -q 'NUMA node 5 does not exist on this host (strict: the step fails)' "$out.err"
result "the same with strict: the step fails with the message" $? "rc=$rc $(head -n 3 "$out.err")"

# --- the cache directory
plugstack_default
mkdir -p "$w/real-cache"
ln -s "$w/real-cache" "$w/cache-link"
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml cache=$w/cache-link"
run -w n3 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c ' GPUTOPO_GPUS=' "$out")" = 2 ] && [ -z "$(ls -A "$w/real-cache")" ]
result "cache= a symlink: not followed (nothing written through it), the step binds from the file" $? \
    "rc=$rc written: $(ls "$w/real-cache") $(head -n 3 "$out.err")"

mkdir -p "$w/full" "$w/ro"
if mount -t tmpfs -o size=64k tmpfs "$w/full" 2>/dev/null; then
    mounts+=("$w/full")
    chmod 755 "$w/full"
    dd if=/dev/zero of="$w/full/fill" bs=4k count=64 2>/dev/null
    cluster_in_slurmd_ns "mount -t tmpfs -o size=64k tmpfs '$w/full' && chmod 755 '$w/full' &&
        { dd if=/dev/zero of='$w/full/fill' bs=4k count=64 2>/dev/null; true; }"
    plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml cache=$w/full"
    run -w n3 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest
    rc=$?
    [ "$rc" -eq 0 ] && [ "$(grep -c ' GPUTOPO_GPUS=' "$out")" = 2 ] && [ "$(ls "$w/full")" = fill ]
    result "cache= on a full file system: no snapshot, no stray temporary file, the step binds" $? "rc=$rc $(ls "$w/full") $(head -n 3 "$out.err")"
else
    tap_not_ok "cache= on a full file system" "could not mount a tmpfs (needs root)"
fi
if mount -t tmpfs -o size=64k,ro tmpfs "$w/ro" 2>/dev/null; then
    mounts+=("$w/ro")
    cluster_in_slurmd_ns "mount -t tmpfs -o size=64k,ro tmpfs '$w/ro'"
    plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml cache=$w/ro"
    run -w n3 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest
    rc=$?
    [ "$rc" -eq 0 ] && [ "$(grep -c ' GPUTOPO_GPUS=' "$out")" = 2 ]
    result "cache= read-only: the step binds from the topology file" $? "rc=$rc $(head -n 3 "$out.err")"
else
    tap_not_ok "cache= read-only" "could not mount a read-only tmpfs (needs root)"
fi

# cache= without topology=: live discovery of this host, written once, read after.
mkdir -p "$w/live-cache"
chmod 755 "$w/live-cache"
plugstack_set "cache=$w/live-cache"
run -w n1 -N1 -n1 --gpu-topo=closest
rc=$?
host=$(hostname)
[ "$rc" -eq 0 ] && [ -s "$w/live-cache/$host.xml" ] && [ -s "$w/live-cache/$host.meta" ] && grep -q '^PROBE' "$out"
result "cache= without topology=: live discovery written to the cache, the step runs" $? \
    "rc=$rc cache: $(ls "$w/live-cache") $(head -n 3 "$out.err")"
# A fresh snapshot is read, not rewritten; one from another boot (or driver) is redone.
meta=$w/live-cache/$host.meta
touch -d '2020-01-01 00:00:00' "$w/live-cache/$host.xml" "$meta"
before=$(stat -c %Y "$w/live-cache/$host.xml")
run -w n1 -N1 -n1 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(stat -c %Y "$w/live-cache/$host.xml")" = "$before" ] && grep -q '^PROBE' "$out"
result "cache= fresh: the next step reads the snapshot, nothing is rewritten" $? \
    "rc=$rc mtime before $before after $(stat -c %Y "$w/live-cache/$host.xml") $(head -n 3 "$out.err")"
sed -i 's/^boot_id=.*/boot_id=00000000-0000-0000-0000-000000000000/' "$meta"
run -w n1 -N1 -n1 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && grep -qx "boot_id=$(cat /proc/sys/kernel/random/boot_id)" "$meta" &&
    [ "$(stat -c %Y "$w/live-cache/$host.xml")" != "$before" ] && grep -q '^PROBE' "$out"
result "cache= stale (another boot): the step's root read redoes the discovery and the stamp" $? \
    "rc=$rc meta: $(tr '\n' ' ' < "$meta") $(head -n 3 "$out.err")"

# cache= without topology= on a full file system (issue 20, H5): the node just
# discovered is used (before: every step unbound, strict steps failed), and
# slurmd's log says so once per node and boot, not once per step.
mkdir -p "$w/full-live"
if mount -t tmpfs -o size=64k tmpfs "$w/full-live" 2>/dev/null; then
    mounts+=("$w/full-live")
    chmod 755 "$w/full-live"
    dd if=/dev/zero of="$w/full-live/fill" bs=4k count=64 2>/dev/null
    cluster_in_slurmd_ns "mount -t tmpfs -o size=64k tmpfs '$w/full-live' && chmod 755 '$w/full-live' &&
        { dd if=/dev/zero of='$w/full-live/fill' bs=4k count=64 2>/dev/null; true; }"
    rm -f /run/gputopo-cache-unwritable
    plugstack_set "cache=$w/full-live"
    log1=$CLUSTER_DIR/log/slurmd-n1.log
    before=$(wc -l < "$log1")
    run -w n1 -N1 -n1 --gpu-topo=closest,strict,verbose
    rc=$?
    cp "$out" "$out.first"; cp "$out.err" "$out.first.err"
    run -w n1 -N1 -n1 --gpu-topo=closest,strict,verbose
    rc2=$?
    warned=$(tail -n +"$((before + 1))" "$log1" | grep -c 'No space left on device.*; the node.s topology is discovered live')
    [ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ] && grep -q '^PROBE.* GPUTOPO_CPUS=' "$out.first" && grep -q '^PROBE.* GPUTOPO_CPUS=' "$out" &&
        [ "$warned" = 1 ] && [ "$(ls "$w/full-live")" = fill ]
    result "cache= without topology= on a full file system: the step runs bound, one warning per boot" $? \
        "rc=$rc rc2=$rc2 warned=$warned $(ls "$w/full-live") $(head -n 3 "$out.first.err") $(head -c 300 "$out.first")"
else
    tap_not_ok "cache= without topology= on a full file system" "could not mount a tmpfs (needs root)"
fi

# NVML that never answers (issue 20, H6): the fake library's nvmlInit_v2 blocks
# for good (its fixture beside it: slurmstepd has slurmd's environment). The
# step's root cache refresh gives up after nvml_timeout=, caches hwloc's view.
mkdir -p "$w/nvml-hang" "$w/nvml-cache"
chmod 755 "$w/nvml-cache"
cp "$CLUSTER_BUILD/fake-nvml/libnvidia-ml.so.1" "$w/nvml-hang/libnvidia-ml.so.1"
cp "$here/../fixtures/nvml/init-hangs.nvml" "$w/nvml-hang/libnvidia-ml.so.1.fixture"
plugstack_set "cache=$w/nvml-cache nvml=$w/nvml-hang/libnvidia-ml.so.1 nvml_timeout=2"
log1=$CLUSTER_DIR/log/slurmd-n1.log
before=$(wc -l < "$log1")
t0=$(date +%s)
run -w n1 -N1 -n1 --gpu-topo=closest
rc=$?
took=$(( $(date +%s) - t0 ))
[ "$rc" -eq 0 ] && grep -q '^PROBE' "$out" && [ "$took" -lt 30 ] &&
    tail -n +"$((before + 1))" "$log1" | grep -q 'did not answer within 2 s (nvml_timeout=)' &&
    [ -s "$w/nvml-cache/$(hostname).snap" ]
result "NVML that never answers: the step's cache refresh ends after nvml_timeout=, hwloc's view cached" $? \
    "rc=$rc took=${took}s cache: $(ls "$w/nvml-cache") $(head -n 3 "$out.err") $(tail -n +"$((before + 1))" "$log1" | grep -i nvml | tail -n 2)"

# The job's environment never reaches hwloc in slurmstepd (issue 20, H10): live
# discovery in user_init (no topology=, no cache=) with the job exporting
# HWLOC_XMLFILE=<n3's 4-GPU topology>: this host (no GPU) is what is discovered.
plugstack_set ""
HWLOC_XMLFILE=$topo3 HWLOC_THISSYSTEM=1 HWLOC_COMPONENTS=xml run -w n1 -N1 -n2 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^PROBE' "$out")" = 2 ] && ! grep -q ' GPUTOPO_GPUS=' "$out"
result "the job's HWLOC_XMLFILE does not reach live discovery in slurmstepd" $? "rc=$rc $(head -n 3 "$out.err") $(head -c 300 "$out")"

# --- steps the plan cannot give a GPU each, or no GPU at all
plugstack_default
run -w n3 -N1 -n8 --gpus-per-node=4 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^PROBE' "$out")" = 8 ] &&
    [ "$(grep -o ' GPUTOPO_GPUS=[^ ]*' "$out" | grep -vcE '^ GPUTOPO_GPUS=[0-3](,[0-3])*$')" = 0 ] &&
    [ "$(grep -c ' GPUTOPO_GPUS=' "$out")" = 8 ]
result "more tasks (8) than GPUs (4): every task runs and gets GPUs of the node" $? "rc=$rc $(head -n 3 "$out.err") $(grep -o ' GPUTOPO_GPUS=[^ ]*' "$out" | tr '\n' ' ')"
run -w n3 -N1 -n2 --gpu-topo=closest
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^PROBE' "$out")" = 2 ]
result "a step with no GPUs: the tasks run" $? "rc=$rc $(head -n 3 "$out.err")"

# --- what a user can put in the job environment
_SLURM_SPANK_OPTION_gputopo_gpu_topo='island,loud' run -w n3 -N1 -n2 --gpus-per-task=1
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^PROBE' "$out")" = 2 ] && ! grep -q ' GPUTOPO_GPUS=' "$out" &&
    [ "$(grep -c "unknown flag 'loud'" "$out.err")" = 1 ]
result "a bad --gpu-topo value through the job environment: one warning, tasks run unbound" $? "rc=$rc $(head -n 3 "$out.err")"

# Batch steps are left unbound; the step inside is bound.
job=$(with_timeout 30 sbatch --parsable -w n3 -N1 -n1 --gpus-per-task=1 --gpu-topo=closest -o "$w/batch.out" \
      --wrap "$here/probe.sh; srun $here/probe.sh")
wait_job_state "$job" COMPLETED 60 >/dev/null
[ "$(grep -c '^PROBE' "$w/batch.out")" = 2 ] && [ "$(grep '^PROBE' "$w/batch.out" | head -n 1 | grep -cE ' GPUTOPO_(MODE|GPUS|CPUS)=')" = 0 ] &&
    [ "$(grep '^PROBE' "$w/batch.out" | tail -n 1 | grep -c ' GPUTOPO_GPUS=')" = 1 ]
result "the batch step is left unbound, the step inside it is bound" $? "$(cat "$w/batch.out" 2>/dev/null | head -c 600)"

# --- launcher faults
cat > "$w/hookkill.sh" <<EOS
#!/bin/bash
srun -o $w/hookkill-%t.out $L --log $w/log-hookkill --checkpoint-cmd 'echo \$\$ > $w/hook.pid; sleep 60' \
  -- bash -c 'trap "" USR1; trap "exit 0" TERM; echo ready > $w/hookkill-ready; while :; do sleep 0.1; done'
EOS
jk=$(with_timeout 30 sbatch --parsable -t 3 -N1 -n1 -o "$w/hookkill-batch.out" "$w/hookkill.sh")
for i in $(seq 1 300); do [ -s "$w/hookkill-ready" ] && break; sleep 0.2; done
scancel --signal=USR1 "$jk"
for i in $(seq 1 100); do [ -s "$w/hook.pid" ] && break; sleep 0.1; done
hp=$(cat "$w/hook.pid" 2>/dev/null)
[ -n "$hp" ] && kill -KILL "$hp"
for i in $(seq 1 100); do grep -q '"event": "hook_end"' "$w"/log-hookkill/*.jsonl 2>/dev/null && break; sleep 0.1; done
st=$(squeue -h -j "$jk" -o %T 2>/dev/null)
grep -q '"event": "hook_end".*"ok": false.*"status": "killed by SIGKILL"' "$w"/log-hookkill/*.jsonl 2>/dev/null && [ "$st" = RUNNING ]
result "SIGKILL during a checkpoint hook: reported as failed (killed by SIGKILL), the program keeps running" $? \
    "state=$st $(cat "$w"/log-hookkill/*.jsonl 2>/dev/null | tail -n 3)"
scancel "$jk"

cat > "$w/lkill.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
srun -o $w/lkill-%t.out $L --log $w/log-lkill --max-restarts 3 \
  -- bash -c 'echo \$\$ > $w/prog.pid; while :; do sleep 0.1; done'
echo "srun exit \$?"
EOS
jl=$(with_timeout 30 sbatch --parsable -t 3 -N1 -n1 -o "$w/lkill-batch.out" "$w/lkill.sh")
for i in $(seq 1 300); do [ -s "$w/prog.pid" ] && grep -q '"event": "start"' "$w"/log-lkill/*.jsonl 2>/dev/null && break; sleep 0.2; done
lp=$(sed -n 's/.*"event": "start".*"pid": \([0-9]*\).*/\1/p' "$w"/log-lkill/*.jsonl 2>/dev/null | head -n 1)
pp=$(cat "$w/prog.pid" 2>/dev/null)
[ -n "$lp" ] && kill -KILL "$lp"
wait_job_state "$jl" COMPLETED 30 >/dev/null
gone=1
for i in $(seq 1 50); do { [ -n "$pp" ] && kill -0 "$pp" 2>/dev/null; } || { gone=0; break; }; sleep 0.2; done
restarts=$(squeue -h -j "$jl" -t all -O 'RestartCnt:|' 2>/dev/null | tr -d '|')
[ -n "$lp" ] && [ "$gone" = 0 ] && grep -q '^srun exit ' "$w/lkill-batch.out" && [ "$restarts" = 0 ]
result "the launcher killed (SIGKILL): the step ends, its program is gone, nothing is requeued" $? \
    "launcher=$lp program=$pp gone=$gone restarts=$restarts $(cat "$w/lkill-batch.out" 2>/dev/null)"

# --- no slurmstepd crashed in any of this (nor in the tests before, in this run)
crashes=$(grep -hiE 'segfault|segmentation fault|signal 11|sigsegv|sigabrt|core dumped|stepd.*abort' "$CLUSTER_DIR"/log/slurmd-*.log 2>/dev/null | head -n 5)
[ -z "$crashes" ]
result "no slurmstepd crash in the slurmd logs" $? "$crashes"
plugstack_default
cleanup_mounts
exit 0
