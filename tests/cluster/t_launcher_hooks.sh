#!/usr/bin/env bash
# gputopo-launch checkpoint hooks and signals on the local cluster:
#  1. Slurm's real pre-timeout signal (sbatch --time=1 --signal=USR1@50): the
#     command hook runs once, finishes before the time-limit kill, and the end
#     is classed "timeout";
#  2. the trigger on 4 ranks over 2 nodes: the command hook runs on rank 0
#     only, the checkpoint signal (USR2) reaches every rank's program;
#  3. a hook too slow for its deadline (SIGTERM, KillWait=5 s from slurm.conf)
#     is reported on stderr and in the event log; the program ignores SIGTERM
#     (it saves and goes on), so the hook always starts;
#  4. a program that dies of the same SIGTERM (proctrack/linuxproc signals it
#     directly): the event log says what happened to the hook;
#  5. SIGTERM to the launcher alone (as proctrack/pgid would send it): held
#     until the command hook ends, then forwarded; a SIGTERM well before the
#     time limit is classed "preemption";
#  6. Slurm's own USR2 to every process: the launcher does not deliver it a
#     second time (auto: the program gets it once); 7. --forward-signals=always
#     does (the event log says forwarded; two USR2 may merge into one in the program).
# The time-limit job takes 60-95 s (slurmctld checks limits every 30 s); the
# other cases run meanwhile. No fixed sleeps: every step waits for its event.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 9
cluster_ensure "${1:-build}" || { echo "not ok - launcher hooks: cluster"; exit 1; }
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/launcher-hooks.$$
mkdir -p "$w"
wait_grep() {  # PATTERN SECONDS FILES...
    local pat=$1 secs=$2 i
    shift 2
    for i in $(seq 1 $((secs * 10))); do
        grep -qE "$pat" "$@" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# The program: writes a ready line once its traps are in place, then loops.
prog() {  # READY-FILE TRAPS
    echo "$2; echo ready >> $1; while :; do sleep 0.1; done"
}

# 1. The real pre-timeout signal.
cat > "$w/timeout.sh" <<EOS
#!/bin/bash
srun -o $w/timeout-%t.out $L --log $w/log-timeout \
  --checkpoint-cmd 'echo "start \$GPUTOPO_CHECKPOINT_TRIGGER \$(date +%s.%N)" >> $w/ckpt; sleep 2; echo "end \$(date +%s.%N)" >> $w/ckpt' \
  -- bash -c '$(prog "$w/timeout-ready" 'trap "" USR1')'
EOS
jt=$(with_timeout 30 sbatch --parsable -N1 -n1 --time=1 --signal=USR1@50 -o "$w/timeout-batch.out" "$w/timeout.sh")

# 2. Command on rank 0, signal on every rank (trigger sent like Slurm's: to every task).
cat > "$w/ranks.sh" <<EOS
#!/bin/bash
srun -o $w/ranks-%t.out $L --log $w/log-ranks --checkpoint-signal USR2 \
  --checkpoint-cmd 'echo "cmd rank \$SLURM_PROCID" >> $w/ranks-cmd' \
  -- bash -c '$(prog "$w/ranks-ready" 'trap "" USR1; trap "echo prog rank \$SLURM_PROCID >> '"$w"'/ranks-sig" USR2')'
EOS
jr=$(with_timeout 30 sbatch --parsable -t 3 -N2 -n4 -o "$w/ranks-batch.out" "$w/ranks.sh")

# 3. A hook slower than the time SIGTERM leaves (KillWait=5 s); the program ignores SIGTERM.
cat > "$w/slow.sh" <<EOS
#!/bin/bash
srun -o $w/slow-%t.out $L --log $w/log-slow --checkpoint-cmd 'sleep 8' -- bash -c '$(prog "$w/slow-ready" 'trap "" TERM')'
EOS
js=$(with_timeout 30 sbatch --parsable -t 3 -N1 -n1 -o "$w/slow-batch.out" "$w/slow.sh")

# 4. The program dies of Slurm's SIGTERM.
cat > "$w/dies.sh" <<EOS
#!/bin/bash
srun -o $w/dies-%t.out $L --log $w/log-dies --checkpoint-cmd 'sleep 2' -- bash -c '$(prog "$w/dies-ready" 'trap "exit 0" TERM')'
EOS
jd=$(with_timeout 30 sbatch --parsable -t 3 -N1 -n1 -o "$w/dies-batch.out" "$w/dies.sh")

# 5. SIGTERM to the launcher only: held until the hook ends.
cat > "$w/held.sh" <<EOS
#!/bin/bash
srun -o $w/held-%t.out $L --log $w/log-held --checkpoint-cmd 'sleep 1; date +%s.%N > $w/held-hook-end' \
  -- bash -c '$(prog "$w/held-ready" 'trap "date +%s.%N > '"$w"'/held-term; exit 0" TERM')'
EOS
jh=$(with_timeout 30 sbatch --parsable -t 3 -N1 -n1 -o "$w/held-batch.out" "$w/held.sh")

# 6./7. Slurm's USR2 to every process, auto and always.
for mode in auto always; do
    cat > "$w/dedup-$mode.sh" <<EOS
#!/bin/bash
srun -o $w/dedup-$mode-%t.out $L --log $w/log-dedup-$mode --forward-signals $mode \
  -- bash -c '$(prog "$w/dedup-$mode-ready" 'trap "echo usr2 >> '"$w"'/dedup-'"$mode"'" USR2')'
EOS
done
ja=$(with_timeout 30 sbatch --parsable -t 3 -N1 -n1 -o "$w/dedup-auto-batch.out" "$w/dedup-auto.sh")
jw=$(with_timeout 30 sbatch --parsable -t 3 -N1 -n1 -o "$w/dedup-always-batch.out" "$w/dedup-always.sh")

# --- 2
wait_lines "$w/ranks-ready" 4 60
scancel --signal=USR1 "$jr"
wait_lines "$w/ranks-sig" 4 20
wait_grep '"event": "hook_end"' 20 "$w"/log-ranks/*.jsonl
n_cmd=$(grep -c '^cmd' "$w/ranks-cmd" 2>/dev/null)
n_sig=$(sort -u "$w/ranks-sig" 2>/dev/null | wc -l)
# Each launcher logs hook_start after it has signalled its program, which may
# already have written its line: give the 4 logs up to 10 s.
for i in $(seq 1 50); do
    n_start=$(cat "$w"/log-ranks/*.jsonl 2>/dev/null | grep -c '"event": "hook_start"')
    [ "$n_start" -ge 4 ] && break
    sleep 0.2
done
if [ "$n_cmd" = 1 ] && grep -qx 'cmd rank 0' "$w/ranks-cmd" && [ "$n_sig" = 4 ] && [ "$n_start" = 4 ]; then
    tap_ok "launcher: one trigger on 4 ranks -> command hook once (rank 0), checkpoint signal to all 4 programs"
else
    tap_not_ok "launcher: one trigger on 4 ranks -> command hook once (rank 0), checkpoint signal to all 4 programs" \
        "command lines: $(cat "$w/ranks-cmd" 2>/dev/null | tr '\n' ';') signal lines: $(cat "$w/ranks-sig" 2>/dev/null | tr '\n' ';') hook_start events: $n_start"
fi
scancel "$jr"

# --- 3
wait_lines "$w/slow-ready" 1 60
scancel --signal=TERM "$js"
wait_grep hook_deadline_missed 15 "$w"/log-slow/*.jsonl
if grep -q '"event": "hook_deadline_missed".*"trigger": "term"' "$w"/log-slow/*.jsonl 2>/dev/null &&
   wait_grep 'checkpoint hook \(term\) will not finish in time' 5 "$w/slow-0.out"; then
    tap_ok "launcher: a hook too slow for its deadline (SIGTERM + KillWait 5 s) is reported"
else
    tap_not_ok "launcher: a hook too slow for its deadline is reported" "$(cat "$w/slow-0.out" "$w"/log-slow/*.jsonl 2>/dev/null | tail -5)"
fi
scancel "$js"

# --- 4
wait_lines "$w/dies-ready" 1 60
scancel --signal=TERM "$jd"
wait_job_state "$jd" COMPLETED 30 >/dev/null
ev=$(cat "$w"/log-dies/*.jsonl 2>/dev/null)
# proctrack/linuxproc gives the program Slurm's SIGTERM too (it may die before the hook);
# proctrack/cgroup only the launcher, which runs the hook, then passes SIGTERM on.
if echo "$ev" | grep -q '"event": "hook_skipped".*"trigger": "term".*already ended' ||
   { echo "$ev" | grep -q '"event": "hook_start".*"trigger": "term"' && echo "$ev" | grep -q '"event": "program_ended"'; } ||
   { [ "${CLUSTER_TASK_CONFIG:-none}" = cgroup ] && echo "$ev" | grep -q '"event": "hook_end".*"trigger": "term"' &&
     echo "$ev" | grep -q '"event": "signal_forwarded".*"SIGTERM"'; }; then
    tap_ok "launcher: a program that dies of Slurm's SIGTERM: the event log says the hook was skipped or outlived it"
else
    tap_not_ok "launcher: a program that dies of Slurm's SIGTERM: the event log says what happened to the hook" "$ev"
fi

# --- 5
wait_lines "$w/held-ready" 1 60
pid=$(sed -n 's/.*"event": "start".*"pid": \([0-9]*\).*/\1/p' "$w"/log-held/*.jsonl 2>/dev/null | head -n 1)
[ -n "$pid" ] && kill -TERM "$pid"
wait_job_state "$jh" COMPLETED 30 >/dev/null
hook_end=$(cat "$w/held-hook-end" 2>/dev/null)
term_at=$(cat "$w/held-term" 2>/dev/null)
if [ -n "$hook_end" ] && [ -n "$term_at" ] && awk -v h="$hook_end" -v t="$term_at" 'BEGIN { exit !(t >= h) }' &&
   grep -q '"event": "signal_forwarded".*after the checkpoint hook' "$w"/log-held/*.jsonl; then
    tap_ok "launcher: SIGTERM to the launcher is held until the checkpoint hook ends, then forwarded"
else
    tap_not_ok "launcher: SIGTERM held until the hook ends" "pid=$pid hook_end=$hook_end term=$term_at" "$(cat "$w"/log-held/*.jsonl 2>/dev/null | tail -5)"
fi

# --- 6, 7
# proctrack/linuxproc signals every process of the step (auto: not forwarded again);
# proctrack/cgroup only the task itself (auto: forwarded).
auto_fwd=false
[ "${CLUSTER_TASK_CONFIG:-none}" = cgroup ] && auto_fwd=true
for pair in "auto:$ja:$auto_fwd" "always:$jw:true"; do
    IFS=: read -r mode job fwd <<< "$pair"
    wait_lines "$w/dedup-$mode-ready" 1 60
    scancel --signal=USR2 "$job"
    wait_grep '"event": "signal".*"signal": "SIGUSR2"' 20 "$w"/log-dedup-$mode/*.jsonl
    wait_lines "$w/dedup-$mode" 1 10
    scancel "$job"
    wait_job_state "$job" CANCELLED 30 >/dev/null
    got=$(cat "$w/dedup-$mode" 2>/dev/null | wc -l)
    if [ "$mode" = auto ]; then ok_count=$([ "$got" = 1 ] && echo 1); else ok_count=$([ "$got" -ge 1 ] && echo 1); fi
    if [ -n "$ok_count" ] && grep -q "\"event\": \"signal\".*\"signal\": \"SIGUSR2\".*\"forwarded\": $fwd" "$w"/log-dedup-$mode/*.jsonl; then
        tap_ok "launcher: --forward-signals=$mode: Slurm's USR2 to every process, forwarded again: $fwd (program saw it $got time(s))"
    else
        tap_not_ok "launcher: --forward-signals=$mode: Slurm's USR2 forwarded again: $fwd" "program saw it $got time(s)" \
            "$(grep SIGUSR2 "$w"/log-dedup-$mode/*.jsonl 2>/dev/null)"
    fi
done

# --- 5 again: the class of a SIGTERM long before the time limit (3 min).
if grep -q '"event": "failure".*"class": "preemption"' "$w"/log-held/*.jsonl 2>/dev/null; then
    tap_ok "launcher: SIGTERM well before the time limit is classed preemption"
else
    tap_not_ok "launcher: SIGTERM well before the time limit is classed preemption" "$(tail -n 2 "$w"/log-held/*.jsonl 2>/dev/null)"
fi

# --- 1
wait_job_state "$jt" TIMEOUT 120 >/dev/null
end_epoch=$(date -d "$(job_field "$jt" EndTime)" +%s 2>/dev/null)
start_t=$(awk '/^start pre_timeout/ {print $3}' "$w/ckpt" 2>/dev/null | head -n 1)
end_t=$(awk '/^end/ {print $2}' "$w/ckpt" 2>/dev/null | head -n 1)
n_start=$(grep -c '^start' "$w/ckpt" 2>/dev/null)
if [ -n "$start_t" ] && [ -n "$end_t" ] && [ -n "$end_epoch" ] && [ "$n_start" = 1 ] &&
   awk -v e="$end_t" -v k="$end_epoch" 'BEGIN { exit !(e < k) }' &&
   grep -q '"event": "hook_end".*"trigger": "pre_timeout".*"ok": true.*"late": false' "$w"/log-timeout/*.jsonl; then
    tap_ok "launcher: Slurm's pre-timeout signal -> hook runs once and finishes $(awk -v e="$end_t" -v k="$end_epoch" 'BEGIN{printf "%.0f", k-e}') s before the time limit"
else
    tap_not_ok "launcher: Slurm's pre-timeout signal -> hook runs and finishes before the kill" \
        "state=$(job_field "$jt" JobState) end=$end_epoch ckpt=$(cat "$w/ckpt" 2>/dev/null | tr '\n' ';')" "$(cat "$w"/log-timeout/*.jsonl 2>/dev/null | tail -4)"
fi
if wait_grep '"event": "failure".*"class": "timeout"' 10 "$w"/log-timeout/*.jsonl; then
    tap_ok "launcher: SIGTERM at the time limit is classed timeout"
else
    tap_not_ok "launcher: SIGTERM at the time limit is classed timeout" "$(tail -n 2 "$w"/log-timeout/*.jsonl 2>/dev/null)"
fi
exit 0
