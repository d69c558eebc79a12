#!/usr/bin/env bash
# gputopo-launch failure handling on the local cluster (sbatch --requeue jobs):
#  - a GPU fault (Xid line) on one node: one requeue, that node in ExcNodeList
#    (EpilogSlurmctld from conf.d/launcher.conf), the next attempt avoids it and
#    succeeds; SLURM_RESTART_COUNT respected;
#  - the same failure on every rank at once (NCCL timeout, no node blamed):
#    one requeue per failure, not per rank; the budget (--max-restarts 1) ends
#    the job with a clear final message and the program's exit code;
#  - a permanent user error (the reserved exit code 78): no requeue.
# The three jobs run side by side. Requeued jobs are released with
# `scontrol update StartTime=now` instead of waiting out Slurm's 120 s hold.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || { echo "not ok - launcher requeue: cluster"; exit 1; }
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/launcher-requeue.$$
mkdir -p "$w"

field() { scontrol show job -o "$1" 2>/dev/null | grep -o " $2=[^ ]*" | head -n 1 | cut -d= -f2-; }

# Releases the job from Slurm's requeue hold once it is pending again; with
# $2 = exc, only after the epilog put a node in ExcNodeList. Returns when the
# job is finished (or after 90 s).
release_until_done() {
    local job=$1 need=${2:-} i st reason
    for i in $(seq 1 450); do
        st=$(field "$job" JobState)
        case "$st" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|"") return 0 ;; esac
        reason=$(field "$job" Reason)
        if [ "$st" = PENDING ] && [ "$reason" = BeginTime ]; then
            if [ "$need" != exc ] || [ "$(field "$job" ExcNodeList)" != "(null)" ]; then
                scontrol update JobId="$job" StartTime=now >/dev/null 2>&1
            fi
        fi
        sleep 0.2
    done
    return 1
}

# 1. GPU fault on one node. The node rank 1 lands on in the first attempt
# becomes "bad": any rank there fails with an Xid line, on every attempt.
cat > "$w/gpu.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
echo "attempt \${SLURM_RESTART_COUNT:-0} nodes \$SLURM_JOB_NODELIST"
srun $L --log $w/log-gpu --max-restarts 2 -- bash -c '
  if [ "\${SLURM_RESTART_COUNT:-0}" = 0 ] && [ "\$SLURM_PROCID" = 1 ]; then echo \$SLURMD_NODENAME > $w/bad; fi
  sleep 0.5
  if [ "\$SLURMD_NODENAME" = "\$(cat $w/bad)" ]; then
    echo "NVRM: Xid (PCI:0000:3b:00): 79, pid=\$\$, GPU has fallen off the bus." >&2; exit 1
  fi
  echo "rank \$SLURM_PROCID ok on \$SLURMD_NODENAME"'
EOS
# 2. Every rank fails at once with a NCCL timeout; budget 1 restart.
cat > "$w/budget.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
echo "attempt \${SLURM_RESTART_COUNT:-0}"
srun $L --log $w/log-budget --max-restarts 1 -- bash -c '
  echo "[Rank \$SLURM_PROCID] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 milliseconds" >&2
  exit 6'
echo "srun exit \$?"
EOS
# 3. Permanent user error: the reserved exit code.
cat > "$w/user.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
srun $L --log $w/log-user -- bash -c 'echo "config error: no such dataset" >&2; exit 78'
EOS

j1=$(sbatch --parsable -N2 -n2 -o "$w/gpu-%j.out" "$w/gpu.sh")
j2=$(sbatch --parsable -N2 -n4 -o "$w/budget-%j.out" "$w/budget.sh")
j3=$(sbatch --parsable -N1 -n1 -o "$w/user-%j.out" "$w/user.sh")
release_until_done "$j1" exc &
r1=$!
release_until_done "$j2" &
r2=$!
wait_job_state "$j3" FAILED 60 >/dev/null 2>&1
wait "$r1" "$r2"

# --- 1
bad=$(cat "$w/bad" 2>/dev/null)
st=$(field "$j1" JobState)
restarts=$(field "$j1" Restarts)
exc=$(field "$j1" ExcNodeList)
last_nodes=$(grep '^attempt' "$w/gpu-$j1.out" | tail -n 1 | awk '{print $4}')
n_requeue=$(cat "$w"/log-gpu/*.jsonl 2>/dev/null | grep -c '"action": "requeue"')
if [ -n "$bad" ] && [ "$st" = COMPLETED ] && [ "$restarts" = 1 ] && [ "$exc" = "$bad" ] && [ "$n_requeue" = 1 ] &&
   ! scontrol show hostnames "$last_nodes" | grep -qx "$bad"; then
    tap_ok "launcher: GPU fault on one node -> one requeue, node $bad excluded, next attempt on $last_nodes succeeds"
else
    tap_not_ok "launcher: GPU fault on one node -> one requeue, bad node excluded, next attempt succeeds" \
        "bad=$bad state=$st restarts=$restarts ExcNodeList=$exc last=$last_nodes requeues=$n_requeue" "$(cat "$w/gpu-$j1.out")"
fi
if grep -q '"event": "excluded_node".*"excluded": "'"$bad"'"' "$w"/log-gpu/*.jsonl 2>/dev/null &&
   grep -q '"class": "gpu_fault".*Xid' "$w"/log-gpu/*.jsonl; then
    tap_ok "launcher: event log records the gpu_fault evidence and the excluded node"
else
    tap_not_ok "launcher: event log records the gpu_fault evidence and the excluded node" "$(cat "$w"/log-gpu/*.jsonl 2>/dev/null | head -20)"
fi

# --- 2
st=$(field "$j2" JobState)
restarts=$(field "$j2" Restarts)
exitcode=$(field "$j2" ExitCode)
n_requeue=$(cat "$w"/log-budget/*.jsonl 2>/dev/null | grep -c '"action": "requeue"')
n_final=$(grep -c 'restart budget exhausted (1 of 1 restarts used' "$w/budget-$j2.out")
if [ "$restarts" = 1 ] && [ "$n_requeue" = 1 ]; then
    tap_ok "launcher: 4 ranks failing at once -> exactly one requeue"
else
    tap_not_ok "launcher: 4 ranks failing at once -> exactly one requeue" "restarts=$restarts requeue events=$n_requeue"
fi
if [ "$st" = COMPLETED ] || [ "$st" = FAILED ]; then :; fi
if [ "$restarts" = 1 ] && [ "$n_final" -ge 1 ] && grep -q '^srun exit 6' "$w/budget-$j2.out" &&
   [ "$(field "$j2" ExcNodeList)" = "(null)" ]; then
    tap_ok "launcher: restart budget exhausted -> stops with a final message and the program's exit code (6); no node blamed for a NCCL timeout"
else
    tap_not_ok "launcher: restart budget exhausted -> stops with a final message and exit code" \
        "state=$st restarts=$restarts exit=$exitcode final-lines=$n_final" "$(cat "$w/budget-$j2.out")"
fi

# --- 3
st=$(field "$j3" JobState)
restarts=$(field "$j3" Restarts)
if [ "$st" = FAILED ] && [ "$restarts" = 0 ] && [ "$(field "$j3" ExitCode)" = "78:0" ] &&
   grep -q 'user_error' "$w/user-$j3.out"; then
    tap_ok "launcher: permanent user error (exit 78) -> no requeue, exit code 78"
else
    tap_not_ok "launcher: permanent user error (exit 78) -> no requeue" "state=$st restarts=$restarts" "$(cat "$w/user-$j3.out")"
fi
exit 0
