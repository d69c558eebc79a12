#!/usr/bin/env bash
# slurmd killed during a job (node failure -> Slurm's requeue path): node n4's
# slurmd is SIGKILLed while a --requeue job runs gputopo-launch there, and the
# node is marked DOWN (what slurmctld does itself after SlurmdTimeout=300 s).
# Slurm requeues the job exactly once (the launcher, cut off with its node,
# adds no second requeue); slurmd comes back, the node returns to service,
# the old attempt's program is gone, and no slurmstepd crashed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 3
cluster_ensure "${1:-build}" || { echo "not ok - node failure: cluster"; exit 1; }
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/nodefail.$$
mkdir -p "$w"
node_state() { sinfo -h -n n4 -o %t 2>/dev/null; }

cat > "$w/job.sh" <<EOS
#!/bin/bash
#SBATCH --requeue
srun $L --log $w/log -- bash -c 'echo \$\$ >> $w/prog.pid; while :; do sleep 0.2; done'
EOS
j=$(with_timeout 30 sbatch --parsable -t 5 -w n4 -N1 -n1 -o "$w/job-%j.out" "$w/job.sh")
for i in $(seq 1 300); do [ -s "$w/prog.pid" ] && break; sleep 0.2; done
pp=$(head -n 1 "$w/prog.pid" 2>/dev/null)
pid=$(cat "$CLUSTER_DIR/run/slurmd-n4.pid" 2>/dev/null)
[ -n "$pid" ] && kill -KILL "$pid"
scontrol update NodeName=n4 State=DOWN Reason=gputopo-test-node-failure
wait_restart_count "$j" 30
restarts=$(squeue -h -j "$j" -O 'RestartCnt:|' 2>/dev/null | tr -d '|')
# Requeued: COMPLETING (the old attempt being cleaned up), then PENDING.
for i in $(seq 1 100); do
    st=$(squeue -h -j "$j" -o %T 2>/dev/null)
    [ "$st" = PENDING ] && break
    sleep 0.2
done
restarts=$(squeue -h -j "$j" -O 'RestartCnt:|' 2>/dev/null | tr -d '|')
[ -n "$pp" ] && [ "$restarts" = 1 ] && { [ "$st" = PENDING ] || [ "$st" = COMPLETING ]; }
rc=$?
if [ "$rc" = 0 ]; then tap_ok "node failure during a job: Slurm requeues it once (restarts 1, $st)"; else
    tap_not_ok "node failure during a job: Slurm requeues it once" "program=$pp restarts=$restarts state=$st"; fi
scancel "$j"

cluster_start_slurmd n4
scontrol update NodeName=n4 State=RESUME 2>/dev/null
for i in $(seq 1 300); do [ "$(node_state)" = idle ] && break; sleep 0.2; done
gone=1
for i in $(seq 1 100); do { [ -n "$pp" ] && kill -0 "$pp" 2>/dev/null; } || { gone=0; break; }; sleep 0.2; done
if [ "$(node_state)" = idle ] && [ "$gone" = 0 ]; then
    tap_ok "the node comes back to service and the old attempt's program is gone"
else
    tap_not_ok "the node comes back and the old program is gone" "state=$(node_state) program $pp still there: $gone"
    [ -n "$pp" ] && kill -KILL "$pp" 2>/dev/null
fi
crashes=$(grep -hiE 'segfault|segmentation fault|signal 11|sigsegv|sigabrt|core dumped' "$CLUSTER_DIR"/log/slurmd-n4.log 2>/dev/null | head -n 5)
[ -z "$crashes" ] && tap_ok "no slurmstepd crash on n4" || tap_not_ok "no slurmstepd crash on n4" "$crashes"
exit 0
