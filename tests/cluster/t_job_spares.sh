#!/usr/bin/env bash
# gputopo run: spares that are not fit to take over, a step Slurm does not
# create, shrinking, and the Python heartbeat helper (python/gputopo_run.py),
# on the loopback cluster (topology/tree leaf1=n[1-2], leaf2=n[3-4]).
# Job C, sbatch -N4 --no-kill, `gputopo run --spares 2 --min-nodes 1
# --spare-check spare_check.sh --spare-check-timeout 3 --hang-timeout 4`, a
# Python program (job_rank.py) beating through gputopo_run; slots n1,n3,
# spares n2 (leaf1), n4 (leaf2):
#  1. at the start every spare is checked; n4's check exits 1: n4 is excluded
#     (spare_check event, the job's Comment record); n2 stays a spare;
#  2. n2's check hangs, rank 0 (n1) is killed: the check is ended after 3 s, n2
#     excluded, no spare is left: the step shrinks to n3 alone (world size 1,
#     a shrink decision), within 10 s + the check's timeout;
#  3. the program stops calling gputopo_run.heartbeat(): the hang is found within
#     --hang-timeout + 5 s and, one node being --min-nodes, the job is requeued.
# Job D, sbatch -N4 --no-kill, `gputopo run --spares 2 --min-nodes 1
# --start-timeout 4`: slots n1,n3, spares n2, n4. n4 is drained and a step of
# the test's own holds n2's CPUs; rank 1 (n3) is killed:
#  4. n4 (n3's island) is passed over (Slurm has it DRAIN), n2 takes the slot,
#     Slurm cannot create the step on busy n2: after --start-timeout the step is
#     ended, n2 excluded (step_start_timeout event) and the step shrinks to n1.
# Prints the measured times ("# measured ...").
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
. "$here/job_timing.sh"
build=${1:-build}
tap_plan 4
unset CLUSTER_DIR
cluster_start "$build" || { echo "not ok - job spares: cluster"; exit 1; }
G=$CLUSTER_BUILD/gputopo
PY=/usr/bin/python3
w=$CLUSTER_DIR/tmp/job-spares.$$
mkdir -p "$w/c" "$w/d"
cat > "$w/c/job.sh" <<EOS
#!/bin/bash
export PYTHONPATH=$CLUSTER_SRC/python PYTHONDONTWRITEBYTECODE=1
exec $G run --spares 2 --min-nodes 1 --max-restarts 5 --hang-timeout 4 --kill-timeout 15 \
    --spare-check "$here/spare_check.sh $w/c" --spare-check-timeout 3 --state-dir $w/c/state -- $PY $here/job_rank.py $w/c
EOS
touch "$w/c/bad.n4"
jc=$(with_timeout 30 sbatch --parsable -N4 --no-kill --requeue -t 10 -o "$w/c/job.out" "$w/c/job.sh")

# 1. the start check.
name="job spares: at the start every spare is checked; one that fails (exit 1) is excluded and recorded"
if wait_lines "$w/c/start.0" 2 60 && wait_lines "$w/c/beat.0" 2 30; then
    for _ in $(seq 1 25); do [[ "$(job_field "$jc" Comment)" == *exclude=n4* ]] && break; sleep 0.2; done
    comment=$(job_field "$jc" Comment)
    checked=$(sed -n 's/.* node=\(n[0-9]\) .*/\1/p' "$w/c/checks" | sort | tr '\n' ' ')
    if [ "$checked" = "n2 n4 " ] && [[ "$comment" == *exclude=n4* ]] &&
       ev "$w/c" "e['event'] == 'spare_check' and e['stage'] == 'start' and e['node'] == 'n4' and not e['ok'] and 'unhealthy' in e['reason']" &&
       ev "$w/c" "e['event'] == 'spare_check' and e['stage'] == 'start' and e['node'] == 'n2' and e['ok']" &&
       [ "$(grep -c 'node=n[13] world=2' "$w/c/start.0")" = 2 ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "checked: $checked comment: $comment $(events "$w/c" | grep spare_check)"
    fi
else
    tap_not_ok "$name" "the first step did not start: $(tail -n 5 "$w/c/job.out" 2>/dev/null)"
fi

# 2. a hung check, then no spare left: shrink.
name="job spares: a spare whose check hangs is excluded after --spare-check-timeout; no spare left -> the step shrinks to one node"
if wait_lines "$w/c/beat.0" 2 5; then
    touch "$w/c/hang.n2"
    t0=$(now)
    kill -KILL "$(cat "$w/c/pid.0.0")"
    wait_lines "$w/c/start.1" 1 40; wait_lines "$w/c/beat.1" 1 20
    run1=$(sub "$(latest "$w/c/start.1")" "$t0")
    # The hung check's task must be killed (gone, or a zombie until slurmstepd reaps it).
    hung_pid=$(sed -n 's/.* node=n2 pid=\([0-9]*\)$/\1/p' "$w/c/checks" | tail -n 1)
    echo "# measured: process fault, hung check on the spare (timeout 3 s), shrink -> the new step running ${run1} s"
    if [ "$(wc -l < "$w/c/start.1")" = 1 ] && grep -q 'rank=0 node=n3 world=1 restart=1 ckpt=ckpt-after-restart-0' "$w/c/start.1" &&
       ev "$w/c" "e['event'] == 'spare_check' and e['stage'] == 'replace' and e['node'] == 'n2' and not e['ok'] and 'did not end within' in e['reason']" &&
       ev "$w/c" "e['event'] == 'restart_decision' and e['action'] == 'shrink' and e['failed_node'] == 'n1'" &&
       [ -n "$hung_pid" ] && [[ "$(ps -o stat= -p "$hung_pid")" != [RSD]* ]] && le "$run1" 13; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "start.1: $(cat "$w/c/start.1" 2>/dev/null); hung check pid ${hung_pid:-?} ($(ps -o stat=,etime=,cmd= -p "${hung_pid:-1}"); steps: $(squeue -h -s -j "$jc" -o '%i %j %N' | tr '\n' ' ')); ${run1} s; $(events "$w/c" | grep -E 'spare_check|restart_decision' | tail -n 3)"
    fi
else
    tap_not_ok "$name" "the first step is not running"
fi

# 3. the Python program stops beating.
name="job spares: a Python rank that stops calling gputopo_run.heartbeat() is a hang within --hang-timeout + 5 s; at --min-nodes -> requeue"
if wait_lines "$w/c/beat.1" 1 5; then
    t0=$(now)
    touch "$w/c/stop-beating"
    wait_event "$w/c" "e['event'] == 'restart_decision' and e['restarts'] == 1" 30
    detected=$(events "$w/c" | python3 -c "
import json, sys
h = [e for e in (json.loads(l) for l in sys.stdin if l.strip()) if e.get('event') == 'hang']
print('%.3f' % h[0]['detected_unix'] if h else '')")
    hang=$(sub "${detected:-0}" "$t0")
    echo "# measured: Python rank stopped beating -> hang detected ${hang} s (--hang-timeout 4)"
    if [ -n "$detected" ] && le "$hang" 9 &&
       ev "$w/c" "e['event'] == 'hang' and e['rank'] == 0 and e['node'] == 'n3'" &&
       ev "$w/c" "e['event'] == 'restart_decision' and e['action'] == 'requeue' and e['failed_node'] == 'n3'"; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "hang ${hang} s; $(events "$w/c" | tail -n 3)"
    fi
else
    tap_not_ok "$name" "the shrunk step is not running"
fi
touch "$w/c/finish"
scancel "$jc" 2>/dev/null
wait_job_state "$jc" CANCELLED 30 >/dev/null 2>&1

# 4. a drained spare, a step Slurm cannot create.
cat > "$w/d/job.sh" <<EOS
#!/bin/bash
export PYTHONPATH=$CLUSTER_SRC/python PYTHONDONTWRITEBYTECODE=1
exec $G run --spares 2 --min-nodes 1 --max-restarts 5 --start-timeout 4 --kill-timeout 15 --state-dir $w/d/state -- $PY $here/job_rank.py $w/d
EOS
jd=$(with_timeout 30 sbatch --parsable -N4 --no-kill -t 10 -o "$w/d/job.out" "$w/d/job.sh")
name="job spares: a drained spare is passed over; a step Slurm cannot create is ended after --start-timeout, its new node excluded, the step shrinks"
if wait_lines "$w/d/start.0" 2 60 && wait_lines "$w/d/beat.0" 2 30; then
    scontrol update nodename=n4 state=drain reason=gputopo-test
    with_timeout 60 srun --jobid="$jd" -w n2 -N1 -n1 sleep 60 > /dev/null 2>&1 &
    holder=$!
    for _ in $(seq 1 50); do squeue -h -s -j "$jd" -o '%i %N' | grep -qE '\.[0-9]+ n2$' && break; sleep 0.2; done
    t0=$(now)
    kill -KILL "$(cat "$w/d/pid.0.1")"
    wait_lines "$w/d/start.2" 1 40; wait_lines "$w/d/beat.2" 1 20
    run2=$(sub "$(latest "$w/d/start.2")" "$t0")
    stuck=$(sub "$(ev_unix "$w/d" step_start_timeout)" "$t0")
    echo "# measured: process fault, drained spare passed over, step not created on busy n2 -> ended ${stuck} s, step on one node running ${run2} s (--start-timeout 4)"
    if [ "$(wc -l < "$w/d/start.2")" = 1 ] && grep -q 'rank=0 node=n1 world=1 restart=2' "$w/d/start.2" && [ ! -e "$w/d/start.1" ] &&
       ev "$w/d" "e['event'] == 'spare_check' and e['stage'] == 'replace' and e['node'] == 'n4' and not e['ok'] and 'DRAIN' in e['reason']" &&
       ev "$w/d" "e['event'] == 'restart_decision' and e['action'] == 'replace' and e['failed_node'] == 'n3' and e['replacement'] == 'n2'" &&
       ev "$w/d" "e['event'] == 'step_start_timeout' and e['node'] == 'n2'" &&
       ev "$w/d" "e['event'] == 'restart_decision' and e['action'] == 'shrink' and e['failed_node'] == 'n2'" &&
       le "$run2" 14; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "start.2: $(cat "$w/d/start.2" 2>/dev/null); ${run2} s; $(events "$w/d" | grep -E 'spare_check|restart_decision|start_timeout')"
    fi
    kill "$holder" 2>/dev/null
else
    tap_not_ok "$name" "the first step did not start: $(tail -n 5 "$w/d/job.out" 2>/dev/null)"
fi
touch "$w/d/finish"
scontrol update nodename=n4 state=resume 2>/dev/null
scancel "$jd" 2>/dev/null
wait
