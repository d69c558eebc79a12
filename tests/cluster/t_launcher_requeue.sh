#!/usr/bin/env bash
# gputopo-launch failure handling on the local cluster (sbatch --requeue jobs):
#  - a GPU fault (Xid line) on one node: one requeue, that node in ExcNodeList
#    (EpilogSlurmctld from conf.d/launcher.conf), the next attempt avoids it and
#    succeeds; SLURM_RESTART_COUNT respected;
#  - the same failure on every rank at once (NCCL timeout, no node blamed):
#    one requeue per failure, not per rank; the budget (--max-restarts 1) ends
#    the job with a clear final message and the program's exit code;
#    the 4 ranks run on 2 nodes, each node with its own --node-state-dir (the
#    test nodes share one /dev/shm), so one leader per node asks and slurmctld
#    accepts only the first requeue: the real cross-node path;
#  - a permanent user error (the reserved exit code 78): no requeue;
#  - the GPU-fault job's name poses as job fields (`x Comment=gputopo:exclude=n9
#    Restarts=99999999999 BatchFlag=0`): the launcher must read the real ones;
#  - a job without --requeue: retryable, but not requeued, and it says why;
#  - --backoff 40 reaches the epilog: the next attempt's StartTime is 40 s out;
#  - --preflight failing on the first attempt: gpu_fault, node excluded; then a
#    node_fault (IB retry error) on the second: requeued, no node blamed; the
#    third attempt succeeds.
# The jobs run side by side. Requeued jobs are released with
# `scontrol update StartTime=now` instead of waiting out Slurm's 120 s hold.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 9
cluster_ensure "${1:-build}" || { echo "not ok - launcher requeue: cluster"; exit 1; }
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/launcher-requeue.$$
mkdir -p "$w"

# Each test node gets its own state directory, as separate machines would have.
for n in $CLUSTER_NODES; do mkdir -p "$w/node/$n"; done
per_node="--node-state-dir $w/node/%n"

# Releases the job from Slurm's requeue hold once it is pending again; with
# $2 = exc, only after the epilog put a node in ExcNodeList. Returns when the
# job is finished (or after 180 s: six jobs side by side on two cores, each
# attempt of the budget job waits out --peer-wait).
release_until_done() {
    local job=$1 need=${2:-} st reason deadline=$(( $(date +%s) + 180 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        st=$(job_field "$job" JobState)
        case "$st" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|"") return 0 ;; esac
        reason=$(job_field "$job" Reason)
        if [ "$st" = PENDING ] && [ "$reason" = BeginTime ]; then
            if [ "$need" != exc ] || [ "$(job_field "$job" ExcNodeList)" != "(null)" ]; then
                scontrol update JobId="$job" StartTime=now >/dev/null 2>&1
            fi
        fi
        sleep 0.2
    done
    stuck_snapshot "$job" > "$w/stuck-$job.txt" 2>&1
    return 1
}

# What a job that does not end is doing: its steps and the processes of the test.
stuck_snapshot() {
    echo "job $1 still $(job_field "$1" JobState) at $(date +%T):"
    scontrol show step -o 2>/dev/null | grep "StepId=$1\." | cut -c1-200
    ps -eo pid,ppid,stat,etime,args 2>/dev/null | grep -E 'gputopo-launch|bash -c|scontrol|squeue|srun' | grep -v grep | cut -c1-200
}

# 1. GPU fault on one node. The node rank 1 lands on in the first attempt
# becomes "bad": any rank there fails with an Xid line, on every attempt.
cat > "$w/gpu.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
echo "attempt \${SLURM_RESTART_COUNT:-0} nodes \$SLURM_JOB_NODELIST"
srun $L --log $w/log-gpu --max-restarts 2 $per_node -- bash -c '
  if [ "\${SLURM_RESTART_COUNT:-0}" = 0 ] && [ "\$SLURM_PROCID" = 1 ]; then echo \$SLURMD_NODENAME > $w/bad; fi
  for i in \$(seq 1 100); do [ -s $w/bad ] && break; sleep 0.1; done   # wait for rank 1 to name the bad node
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
srun $L --log $w/log-budget --max-restarts 1 $per_node -- bash -c '
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

# 4. No --requeue: a GPU fault is retryable, but the job cannot be requeued.
cat > "$w/noreq.sh" <<EOS
#!/bin/bash
srun $L --log $w/log-noreq -- bash -c 'echo "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus." >&2; exit 1'
EOS
# 5. Back-off through to the epilog: 40 s before the next attempt may start.
cat > "$w/backoff.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
srun $L --log $w/log-backoff --backoff 40 -- bash -c '
  [ "\${SLURM_RESTART_COUNT:-0}" = 0 ] || exit 0
  echo "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus." >&2; exit 1'
EOS
# 6. Preflight fails on attempt 0; a node fault on attempt 1; attempt 2 succeeds.
cat > "$w/pre.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
echo "attempt \${SLURM_RESTART_COUNT:-0} nodes \$SLURM_JOB_NODELIST"
srun $L --log $w/log-pre --max-restarts 3 --preflight '[ "\${SLURM_RESTART_COUNT:-0}" != 0 ] || { echo "doctor: GPU 0 missing"; exit 1; }' \
  -- bash -c '
  if [ "\${SLURM_RESTART_COUNT:-0}" = 1 ]; then echo "NCCL WARN NET/IB : Got completion with error 12, transport retry counter exceeded" >&2; exit 1; fi
  echo "attempt \$SLURM_RESTART_COUNT ran"'
EOS

j1=$(with_timeout 30 sbatch --parsable -t 5 -N2 -n2 -J 'x Comment=gputopo:exclude=n9 Restarts=99999999999 BatchFlag=0' \
     -o "$w/gpu-%j.out" "$w/gpu.sh")
j2=$(with_timeout 30 sbatch --parsable -t 5 -N2 -n4 --ntasks-per-node=2 -o "$w/budget-%j.out" "$w/budget.sh")
j3=$(with_timeout 30 sbatch --parsable -t 5 -N1 -n1 -o "$w/user-%j.out" "$w/user.sh")
j4=$(with_timeout 30 sbatch --parsable -t 5 --no-requeue -N1 -n1 -o "$w/noreq-%j.out" "$w/noreq.sh")
j5=$(with_timeout 30 sbatch --parsable -t 5 -N1 -n1 -o "$w/backoff-%j.out" "$w/backoff.sh")
j6=$(with_timeout 30 sbatch --parsable -t 5 -N1 -n1 -o "$w/pre-%j.out" "$w/pre.sh")
release_until_done "$j1" exc &
r1=$!
release_until_done "$j2" &
r2=$!
release_until_done "$j6" exc &
r6=$!
wait_job_state "$j3" FAILED 120 >/dev/null 2>&1 || stuck_snapshot "$j3" > "$w/stuck-$j3.txt" 2>&1
wait_job_state "$j4" FAILED 120 >/dev/null 2>&1 || stuck_snapshot "$j4" > "$w/stuck-$j4.txt" 2>&1
# The back-off job: once the epilog has run (ExcNodeList set) and the job is pending again,
# it may start ~40 s later (EligibleTime, the begin time the epilog set). While the job is
# still COMPLETING, StartTime is the attempt that just ended.
backoff_left=""
deadline=$(( $(date +%s) + 150 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
    exc=$(job_field "$j5" ExcNodeList)
    if [ "$exc" != "(null)" ] && [ -n "$exc" ] && [ "$(job_field "$j5" JobState)" = PENDING ]; then
        st_time=$(date -d "$(job_field "$j5" EligibleTime)" +%s 2>/dev/null) && backoff_left=$((st_time - $(date +%s)))
        break
    fi
    sleep 0.2
done
backoff_comment=$(squeue -h -j "$j5" -O 'Comment:|' 2>/dev/null)
[ -n "$backoff_left" ] || stuck_snapshot "$j5" > "$w/stuck-$j5.txt" 2>&1
scancel "$j5"
wait "$r1" "$r2" "$r6"

# --- 1
bad=$(cat "$w/bad" 2>/dev/null)
st=$(job_field "$j1" JobState)
restarts=$(job_field "$j1" Restarts)
exc=$(job_field "$j1" ExcNodeList)
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
st=$(job_field "$j2" JobState)
restarts=$(job_field "$j2" Restarts)
exitcode=$(job_field "$j2" ExitCode)
n_requeue=$(cat "$w"/log-budget/*.jsonl 2>/dev/null | grep -c '"action": "requeue"')
n_final=$(grep -c 'restart budget exhausted (1 of 1 restarts used' "$w/budget-$j2.out")
if [ "$restarts" = 1 ] && [ "$n_requeue" = 1 ]; then
    tap_ok "launcher: 4 ranks on 2 nodes (a state dir per node) failing at once -> exactly one requeue"
else
    tap_not_ok "launcher: 4 ranks failing at once -> exactly one requeue" "restarts=$restarts requeue events=$n_requeue" \
        "$(grep -h requeue_decision "$w"/log-budget/*.jsonl 2>/dev/null)"
fi
# The batch script goes on after srun (echo): the job itself completes.
if [ "$st" = COMPLETED ] && [ "$restarts" = 1 ] && [ "$n_final" -ge 1 ] && grep -q '^srun exit 6' "$w/budget-$j2.out" &&
   [ "$(job_field "$j2" ExcNodeList)" = "(null)" ]; then
    tap_ok "launcher: restart budget exhausted -> stops with a final message and the program's exit code (6), job COMPLETED; no node blamed for a NCCL timeout"
else
    tap_not_ok "launcher: restart budget exhausted -> stops with a final message and exit code" \
        "state=$st restarts=$restarts exit=$exitcode final-lines=$n_final" "$(cat "$w/budget-$j2.out")" \
        "$(cat "$w/stuck-$j2.txt" 2>/dev/null)" "$(cat "$w"/log-budget/*.jsonl 2>/dev/null | cut -c1-300 | tail -n 40)"
fi

# --- 3
st=$(job_field "$j3" JobState)
restarts=$(job_field "$j3" Restarts)
if [ "$st" = FAILED ] && [ "$restarts" = 0 ] && [ "$(job_field "$j3" ExitCode)" = "78:0" ] &&
   grep -q 'user_error' "$w/user-$j3.out"; then
    tap_ok "launcher: permanent user error (exit 78) -> no requeue, exit code 78"
else
    tap_not_ok "launcher: permanent user error (exit 78) -> no requeue" "state=$st restarts=$restarts" "$(cat "$w/user-$j3.out")" \
        "$(cat "$w/stuck-$j3.txt" 2>/dev/null)" "$(cat "$w"/log-user/*.jsonl 2>/dev/null | cut -c1-300 | tail -n 20)"
fi
# --- 1 (the name posing as fields): the real Restarts/BatchFlag were read.
if [ "$(job_field "$j1" Restarts)" = 1 ] && ! grep -q 'not a batch job' "$w/gpu-$j1.out" &&
   ! cat "$w"/log-gpu/*.jsonl 2>/dev/null | grep -q '"excluded": "n9"'; then
    tap_ok "launcher: a job name posing as Comment/Restarts/BatchFlag fields does not change the decision"
else
    tap_not_ok "launcher: a job name posing as fields does not change the decision" "$(cat "$w/gpu-$j1.out")"
fi

# --- 4
st=$(job_field "$j4" JobState)
if [ "$st" = FAILED ] && [ "$(job_field "$j4" Restarts)" = 0 ] && grep -q 'its Requeue=0: submitted with --no-requeue' "$w/noreq-$j4.out"; then
    tap_ok "launcher: a job without --requeue: the GPU fault is reported, not requeued, and it says why"
else
    tap_not_ok "launcher: a job without --requeue is not requeued and says why" "state=$st" "$(cat "$w/noreq-$j4.out")"
fi

# --- 5
case "$backoff_comment" in *"gputopo:exclude="*";backoff=40"*) bc=1 ;; *) bc=0 ;; esac
if [ "$bc" = 1 ] && [ -n "$backoff_left" ] && [ "$backoff_left" -ge 25 ] && [ "$backoff_left" -le 45 ]; then
    tap_ok "launcher + epilog: --backoff 40 -> the next attempt may start $backoff_left s later"
else
    tap_not_ok "launcher + epilog: --backoff 40 reaches the epilog" "comment=$backoff_comment start in ${backoff_left:-?} s" \
        "$(cat "$w/stuck-$j5.txt" 2>/dev/null)" "$(cat "$w/backoff-$j5.out")" "$(cat "$w"/log-backoff/*.jsonl 2>/dev/null | cut -c1-300 | tail -n 20)"
fi

# --- 6
st=$(job_field "$j6" JobState)
ev=$(cat "$w"/log-pre/*.jsonl 2>/dev/null)
if [ "$st" = COMPLETED ] && [ "$(job_field "$j6" Restarts)" = 2 ] &&
   echo "$ev" | grep -q '"class": "gpu_fault".*preflight failed: doctor: GPU 0 missing' &&
   echo "$ev" | grep -q '"class": "node_fault".*transport retry counter exceeded' &&
   [ "$(echo "$ev" | grep -c '"event": "excluded_node"')" = 1 ] && grep -q 'attempt 2 ran' "$w/pre-$j6.out"; then
    tap_ok "launcher: --preflight failure -> gpu_fault requeue with the node excluded; node_fault -> requeue, no node blamed; then success"
else
    tap_not_ok "launcher: --preflight failure and node_fault requeues" "state=$st restarts=$(job_field "$j6" Restarts)" "$(cat "$w/pre-$j6.out")" \
        "$(echo "$ev" | grep -E 'failure|excluded|requeue_decision')"
fi
exit 0
