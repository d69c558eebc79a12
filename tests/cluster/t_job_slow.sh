#!/usr/bin/env bash
# gputopo run and a slow node, with a real PyTorch training job
# (tests/cluster/torch/train_run.py: DDP over gloo, TRAIN_WORK matrix products
# per step inside gputopo_run.busy(), a checkpoint every 10 steps reported by
# rank 0), on its own cluster (topology/tree leaf1=n[1-2], leaf2=n[3-4]). The
# step is compute-bound, as a GPU job's is (a throttle slows only the work it
# limits): about 40 ms of matrix products and 50 ms of pause per step.
# One job, sbatch -N3 --no-kill, `gputopo run --spares 1 --slow-nodes replace
# --slow-window 2 --slow-windows 3`: two slots (one rank each), one spare. A
# node is throttled by a duty-cycled stop of its rank (SIGSTOP 45 ms of every
# 50 ms: a node about 10x slower): in DDP the other rank waits for it in every
# step, so both ranks' step counts advance alike; only the time in their own
# work differs. The cycle is short beside the rank's own work per step (a few
# ms of matrix products), so that work is stretched whatever the host's speed;
# with 300 ms of every 330 ms, a fast host's few ms of work mostly fit between
# two stops and the throttled rank's busy rate stayed above half the median.
#  1. rank 1's node throttled for 3 s only: a slow window is seen (slow_window
#     event), but no slow_node event and no restart;
#  2. rank 1's node throttled until it is replaced: a slow_node event names the
#     node, with its rate below half the median;
#  3. the step ends at the next checkpoint reported after the event (no other in
#     between), the spare takes the node's slot, and the training resumes from
#     that checkpoint with every later step trained once (the ranks' own
#     records: start.A, steps.A, the checkpoint files).
# Prints the measured times ("# measured ...").
set -u
# Debian's python3 (torch) first: a python3 shim elsewhere on PATH (pyenv) costs seconds a start here.
PATH=/usr/bin:$PATH
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
. "$here/job_timing.sh"
build=${1:-build}
tap_plan 3
PY=/usr/bin/python3
if ! $PY -c 'import torch.distributed' 2>/dev/null; then
    for i in 1 2 3; do tap_not_ok "job slow: case $i" "no torch in $PY (make deps installs python3-torch)"; done
    exit 0
fi
unset CLUSTER_DIR
cluster_start "$build" || { echo "not ok - job slow: cluster"; exit 1; }
G=$CLUSTER_BUILD/gputopo
w=$CLUSTER_DIR/tmp/job-slow.$$
mkdir -p "$w"
chmod 755 "$CLUSTER_DIR/tmp" "$w"
node_of() { sed -n "s/^rank=$2 .* node=\([^ ]*\) .*/\1/p" "$1" 2>/dev/null | head -n 1; }
steps_ok() {
    python3 -c "
import sys
s = [int(l.split('=')[1]) for l in open(sys.argv[1]) if l.startswith('step=')]
sys.exit(0 if s and s == list(range(int(sys.argv[2]) + 1, int(sys.argv[2]) + 1 + len(s))) else 1)" "$1" "$2"
}
last_step() { sed -n 's/^step=//p' "$1" 2>/dev/null | tail -n 1; }
resumed_from() { sed -n 's/.* ckpt=[^ ]*step-\([0-9]*\)\.pt .*/\1/p' "$1" 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# throttle PID MS: stops PID for 45 ms of every 50 ms, for MS milliseconds (0: until PID ends);
# one process with its own clock (a shell loop's sleeps stretch on a loaded host).
throttle() {
    $PY -c '
import os, signal, sys, time
pid, ms = int(sys.argv[1]), int(sys.argv[2])
end = time.monotonic() + ms / 1000.0
try:
    while ms == 0 or time.monotonic() < end:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.045)
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.005)
except ProcessLookupError:
    pass
finally:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass' "$1" "$2"
}
mtime() { stat -c %.3Y "$1" 2>/dev/null; }

cat > "$w/job.sh" <<EOS
#!/bin/bash
export PYTHONPATH=$CLUSTER_SRC/python PYTHONDONTWRITEBYTECODE=1 TRAIN_PACE=0.05 TRAIN_WORK=32 TRAIN_PORT_BASE=$((20000 + RANDOM % 20000))
exec $G run --spares 1 --max-restarts 2 --slow-nodes replace --slow-window 2 --slow-windows 3 --kill-timeout 15 \
    --state-dir $w/state -- $PY $here/torch/train_run.py $w 100000 10
EOS
job=$(with_timeout 30 sbatch --parsable -N3 --no-kill -t 5 -o "$w/job.out" "$w/job.sh")

# 1. briefly slow.
name="job slow: a node throttled for 3 s only is seen slow in a window, but not flagged, not replaced"
slow=""
if wait_lines "$w/start.0" 2 90 && wait_lines "$w/steps.0" 15 60; then
    slow=$(node_of "$w/start.0" 1)
    pid=$(cat "$w/pid.0.1")
    throttle "$pid" 3000
    sleep 5  # a flag would need a third slow window in a row, ending by now
    if [ -n "$slow" ] && ev "$w" "e['event'] == 'slow_window' and e['rates'].startswith('$slow=')" &&
       ! ev "$w" "e['event'].startswith('slow_node')" && [ ! -e "$w/start.1" ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "slow=$slow $(events "$w" | grep -E 'slow|decision' | tail -n 3) steps=$(wc -l < "$w/steps.0")"
    fi
else
    tap_not_ok "$name" "the first step did not train: $(tail -n 5 "$w/job.out" 2>/dev/null)"
fi

# 2. throttled until replaced: detected.
name="job slow: a node throttled for good -> a slow_node event names it, its rate below half the median"
t0=$(now)
[ -n "$slow" ] && { throttle "$(cat "$w/pid.0.1")" 0 & }
# Under load a window where some rank made no progress judges nobody: detection can take
# several times 3 x 2 s (46 s seen in CI beside other work); the wait ends at the event.
wait_named "$w" slow_node 120
flagged=$(ev_unix "$w" slow_node)
echo "# measured: throttled -> slow_node event $(sub "${flagged:-0}" "$t0") s (--slow-window 2 --slow-windows 3)"
if [ -n "$slow" ] && ev "$w" "e['event'] == 'slow_node' and e['node'] == '$slow' and e['basis'] == 'busy' and e['rate'] < 0.5 * e['median'] and '$slow=' in e['rates']"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "slow=$slow $(events "$w" | grep -E 'slow' | tail -n 3)"
fi

# 3. replaced at the next checkpoint, resumed from it.
name="job slow: the step ends at the next checkpoint after the event, the spare takes the slot, training resumes from that checkpoint"
wait_lines "$w/start.1" 2 90; wait_lines "$w/steps.1" 3 60
ckpt=$(resumed_from "$w/start.1")
spare=$(events "$w" | python3 -c "
import json, sys
d = [e for e in (json.loads(l) for l in sys.stdin if l.strip()) if e.get('event') == 'restart_decision']
print(d[0]['replacement'] if d else '')")
replaced=$(ev_unix "$w" slow_node_replace)
c1=$(mtime "$w/ckpt/step-${ckpt:-0}.pt"); c0=$(mtime "$w/ckpt/step-$(( ${ckpt:-0} - 10 )).pt")
echo "# measured: slow_node event -> step ended at the checkpoint $(sub "${replaced:-0}" "${flagged:-0}") s; checkpoint interval while throttled $(sub "${c1:-0}" "${c0:-0}") s; steps of attempt 0 past the checkpoint: $(( $(last_step "$w/steps.0") - ${ckpt:-0} ))"
if [ -n "$ckpt" ] && [ -n "$flagged" ] && [ -n "$c1" ] && [ -n "$spare" ] &&
   ev "$w" "e['event'] == 'slow_node_replace' and e['node'] == '$slow' and e['checkpoint'].endswith('/step-$ckpt.pt')" \
       "e['event'] == 'restart_decision' and e['action'] == 'replace' and e['failed_node'] == '$slow'" &&
   ! ev "$w" "e['event'] == 'hang'" &&
   le "$flagged" "$c1" && { [ -z "$c0" ] || le "$c0" "$flagged"; } &&
   [ "$(node_of "$w/start.1" 1)" = "$spare" ] && [ "$(node_of "$w/start.1" 0)" = "$(node_of "$w/start.0" 0)" ] &&
   [ "$(last_step "$w/steps.0")" -lt $(( ckpt + 10 )) ] && steps_ok "$w/steps.1" "$ckpt"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "ckpt=$ckpt flagged=$flagged c0=$c0 c1=$c1 spare=$spare start.1: $(tr '\n' ';' < "$w/start.1" 2>/dev/null) $(events "$w" | grep -E 'slow|decision|step_end' | tail -n 4)"
fi
kill %1 2>/dev/null
scancel "$job" 2>/dev/null
wait_job_state "$job" CANCELLED 30 >/dev/null 2>&1
wait
