#!/usr/bin/env bash
# gputopo-launch checkpoint hooks on the local cluster:
#  - Slurm's real pre-timeout signal (sbatch --time=1 --signal=USR1@50): the
#    command hook runs once, finishes, and before the time-limit kill;
#  - the trigger on 4 ranks over 2 nodes: the command hook runs on rank 0
#    only, the checkpoint signal (USR2) reaches every rank's program;
#  - a hook too slow for its deadline (SIGTERM, KillWait=5 s from
#    `scontrol show config`) is reported, on stderr and in the event log.
# The time-limit job takes 60-95 s (slurmctld checks limits every 30 s); the
# other cases run meanwhile.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || { echo "not ok - launcher hooks: cluster"; exit 1; }
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/launcher-hooks.$$
mkdir -p "$w"
field() { scontrol show job -o "$1" 2>/dev/null | grep -o " $2=[^ ]*" | head -n 1 | cut -d= -f2-; }
wait_file_lines() {  # FILE N SECONDS
    local i
    for i in $(seq 1 $(($3 * 10))); do
        [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
loop='trap "" USR1; while :; do sleep 0.1; done'

# 1. The real pre-timeout signal.
cat > "$w/timeout.sh" <<EOS
#!/bin/bash
srun -o $w/timeout-%t.out $L --log $w/log-timeout \
  --checkpoint-cmd 'echo "start \$GPUTOPO_CHECKPOINT_TRIGGER \$(date +%s.%N)" >> $w/ckpt; sleep 2; echo "end \$(date +%s.%N)" >> $w/ckpt' \
  -- bash -c '$loop'
EOS
jt=$(sbatch --parsable -N1 -n1 --time=1 --signal=USR1@50 -o "$w/timeout-batch.out" "$w/timeout.sh")

# 2. Command on rank 0, signal on every rank (trigger sent like Slurm's: to every task).
cat > "$w/ranks.sh" <<EOS
#!/bin/bash
srun -o $w/ranks-%t.out $L --log $w/log-ranks --checkpoint-signal USR2 \
  --checkpoint-cmd 'echo "cmd rank \$SLURM_PROCID" >> $w/ranks-cmd' \
  -- bash -c 'trap "echo prog rank \$SLURM_PROCID >> $w/ranks-sig" USR2; $loop'
EOS
jr=$(sbatch --parsable -N2 -n4 -o "$w/ranks-batch.out" "$w/ranks.sh")

# 3. A hook slower than the time SIGTERM leaves (KillWait=5 s).
cat > "$w/slow.sh" <<EOS
#!/bin/bash
srun -o $w/slow-%t.out $L --log $w/log-slow --checkpoint-cmd 'sleep 8' -- bash -c 'trap "exit 0" TERM; $loop'
EOS
js=$(sbatch --parsable -N1 -n1 -o "$w/slow-batch.out" "$w/slow.sh")

wait_job_state "$jr" RUNNING 30 >/dev/null && sleep 1.5
scancel --signal=USR1 "$jr"
wait_file_lines "$w/ranks-sig" 4 10
sleep 0.5
n_cmd=$(grep -c '^cmd' "$w/ranks-cmd" 2>/dev/null)
n_sig=$(sort -u "$w/ranks-sig" 2>/dev/null | wc -l)
if [ "$n_cmd" = 1 ] && grep -qx 'cmd rank 0' "$w/ranks-cmd" && [ "$n_sig" = 4 ]; then
    tap_ok "launcher: one trigger on 4 ranks -> command hook once (rank 0), checkpoint signal to all 4 programs"
else
    tap_not_ok "launcher: one trigger on 4 ranks -> command hook once (rank 0), checkpoint signal to all 4 programs" \
        "command lines: $(cat "$w/ranks-cmd" 2>/dev/null | tr '\n' ';') signal lines: $(cat "$w/ranks-sig" 2>/dev/null | tr '\n' ';')"
fi
scancel "$jr"

wait_job_state "$js" RUNNING 30 >/dev/null && sleep 1.5
scancel --signal=TERM "$js"
for i in $(seq 1 100); do grep -q hook_deadline_missed "$w"/log-slow/*.jsonl 2>/dev/null && break; sleep 0.1; done
if grep -q '"event": "hook_deadline_missed".*"trigger": "term"' "$w"/log-slow/*.jsonl 2>/dev/null &&
   grep -q 'checkpoint hook (term) will not finish in time' "$w/slow-0.out"; then
    tap_ok "launcher: a hook too slow for its deadline (SIGTERM + KillWait 5 s) is reported"
else
    tap_not_ok "launcher: a hook too slow for its deadline is reported" "$(cat "$w/slow-0.out" "$w"/log-slow/*.jsonl 2>/dev/null | tail -5)"
fi
scancel "$js"

# Back to 1.
wait_job_state "$jt" TIMEOUT 120 >/dev/null
end_epoch=$(date -d "$(field "$jt" EndTime)" +%s 2>/dev/null)
start_t=$(awk '/^start pre_timeout/ {print $3}' "$w/ckpt" 2>/dev/null | head -n 1)
end_t=$(awk '/^end/ {print $2}' "$w/ckpt" 2>/dev/null | head -n 1)
n_start=$(grep -c '^start' "$w/ckpt" 2>/dev/null)
if [ -n "$start_t" ] && [ -n "$end_t" ] && [ -n "$end_epoch" ] && [ "$n_start" = 1 ] &&
   awk -v e="$end_t" -v k="$end_epoch" 'BEGIN { exit !(e < k) }' &&
   grep -q '"event": "hook_end".*"trigger": "pre_timeout".*"ok": true.*"late": false' "$w"/log-timeout/*.jsonl; then
    tap_ok "launcher: Slurm's pre-timeout signal -> hook runs once and finishes $(awk -v e="$end_t" -v k="$end_epoch" 'BEGIN{printf "%.0f", k-e}') s before the time limit"
else
    tap_not_ok "launcher: Slurm's pre-timeout signal -> hook runs and finishes before the kill" \
        "state=$(field "$jt" JobState) end=$end_epoch ckpt=$(cat "$w/ckpt" 2>/dev/null | tr '\n' ';')" "$(cat "$w"/log-timeout/*.jsonl 2>/dev/null | tail -4)"
fi
exit 0
