#!/usr/bin/env bash
# gputopo run: hot spares and in-job restart on the loopback cluster (own
# cluster: SlurmdTimeout=40, so slurmctld sees a killed slurmd within a minute; not
# less, see GPUTOPO_CLUSTER_SLURMD_TIMEOUT in harness.sh).
# Job A, sbatch -N4 --no-kill, `gputopo run --spares 2 --hang-timeout 5`: the
# step runs on n1,n3 (spares n2 in leaf1, n4 in leaf2; topology/tree leaf1=n[1-2],
# leaf2=n[3-4]), 1 rank per node, then one fault after the other:
#  1. kill -9 of rank 0 (n1): the new step runs on n2,n3 (n2: n1's leaf), rank 1
#     stays on n3, the program gets GPUTOPO_RESTART_COUNT=1 and the checkpoint it
#     reported; n1 in the job's Comment record; <= 10 s fault -> every rank running;
#  2. slurmd of n3 SIGKILLed (node loss): the new step on n2,n4, <= 10 s plus the
#     detection time (fault -> the supervisor's step_end);
#  3. SIGSTOP of rank 1 (n4): hang detected within --hang-timeout + 5 s;
#  4. no spare left (no --min-nodes): the job is requeued with n4 excluded
#     (EpilogSlurmctld, conf.d/launcher.conf) and n1, n3 still in the record.
# Job B: rank 1 exits 78 (a user error): the job ends with 78, no restart.
# Prints the measured times ("# measured ...").
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
. "$here/job_timing.sh"
build=${1:-build}
tap_plan 6
unset CLUSTER_DIR
GPUTOPO_CLUSTER_SLURMD_TIMEOUT=40 cluster_start "$build" || { echo "not ok - job restart: cluster"; exit 1; }
G=$CLUSTER_BUILD/gputopo
w=$CLUSTER_DIR/tmp/job-restart.$$
mkdir -p "$w/a" "$w/b"
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1"; }  # field FILE KEY: every line's KEY
on_node() { grep " node=$2 " "$1" | sed -n 's/.* rank=\([0-9]*\) .*/\1/p'; }  # ranks of FILE on NODE
event_time() {  # event_time DIR NAME NTH: the unix time of the NTH (1-based) event NAME
    events "$1" | python3 -c "
import datetime, json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
unix = lambda t: datetime.datetime.strptime(t, '%Y-%m-%dT%H:%M:%S.%fZ').replace(tzinfo=datetime.timezone.utc).timestamp()
ev = [e for e in ev if e.get('event') == sys.argv[1]]
n = int(sys.argv[2])
print('%.3f' % unix(ev[n - 1]['time']) if len(ev) >= n else '')" "$2" "$3"
}

cat > "$w/a/job.sh" <<EOS
#!/bin/bash
exec $G run --spares 2 --max-restarts 5 --hang-timeout 5 --kill-timeout 15 --state-dir $w/a/state -- $here/job_rank.sh $w/a
EOS
ja=$(with_timeout 30 sbatch --parsable -N4 --no-kill --requeue -t 10 -o "$w/a/job.out" "$w/a/job.sh")
cat > "$w/b/job.sh" <<EOS
#!/bin/bash
$G run --spares 1 --max-restarts 5 --state-dir $w/b/state -- $here/job_rank.sh $w/b
echo "gputopo run exit \$?"
EOS
touch "$w/b/user-error"

# 1. process fault.
name="job restart: kill -9 of one rank -> a spare of its island takes its ranks, the others stay, checkpoint handed over"
if wait_lines "$w/a/start.0" 2 60 && wait_lines "$w/a/beat.0" 2 30; then
    t0=$(now)
    kill -KILL "$(cat "$w/a/pid.0.0")"
    wait_lines "$w/a/start.1" 2 30; wait_lines "$w/a/beat.1" 2 30
    run1=$(sub "$(latest "$w/a/start.1")" "$t0"); beat1=$(sub "$(earliest "$w/a/beat.1")" "$t0")
    echo "# measured: process fault -> every rank of the new step running ${run1} s, -> first heartbeat ${beat1} s"
    first=$(cat "$w/a/start.0"); second=$(cat "$w/a/start.1")
    # The record is written once the new step runs (two bounded RPCs after its launch).
    for _ in $(seq 1 25); do [[ "$(job_field "$ja" Comment)" == *exclude=n1* ]] && break; sleep 0.2; done
    comment=$(job_field "$ja" Comment)
    if [ "$(on_node "$w/a/start.0" n1)" = 0 ] && [ "$(on_node "$w/a/start.0" n3)" = 1 ] &&
       [ "$(on_node "$w/a/start.1" n2)" = 0 ] && [ "$(on_node "$w/a/start.1" n3)" = 1 ] &&
       [ "$(field "$w/a/start.1" ckpt | sort -u)" = ckpt-after-restart-0 ] &&
       [[ "$comment" == *exclude=n1* ]] && le "$run1" 10; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "before: $first; after: $second; comment: $comment; ${run1} s"
    fi
else
    tap_not_ok "$name" "the first step did not start: $(cat "$w/a/job.out" 2>/dev/null | tail -n 5)"
fi

# 2. node loss.
name="job restart: slurmd of a node killed -> the node's spare runs its ranks within 10 s plus detection"
if wait_lines "$w/a/beat.1" 2 5; then
    t0=$(now)
    kill -KILL "$(cat "$CLUSTER_DIR/run/slurmd-n3.pid")"
    # 120 s: Slurm declares the node lost SlurmdTimeout (40 s) plus up to a ping interval
    # and a forwarded ping's connect retries (10 s each) after the kill.
    wait_lines "$w/a/start.2" 2 120; wait_lines "$w/a/beat.2" 2 30
    detect=$(sub "$(event_time "$w/a" step_end 2)" "$t0")
    run2=$(sub "$(latest "$w/a/start.2")" "$t0"); beat2=$(sub "$(earliest "$w/a/beat.2")" "$t0")
    echo "# measured: node loss -> detected ${detect} s, -> every rank running ${run2} s, -> first heartbeat ${beat2} s"
    if [ "$(on_node "$w/a/start.2" n2)" = 0 ] && [ "$(on_node "$w/a/start.2" n4)" = 1 ] &&
       le "$(sub "$run2" "$detect")" 10; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "$(cat "$w/a/start.2" 2>/dev/null); detect ${detect} s, run ${run2} s"
    fi
else
    tap_not_ok "$name" "the second step is not running"
fi

# 3. hang, 4. no spare left -> requeue.
name="job restart: SIGSTOP of one rank -> hang detected within --hang-timeout + 5 s"
if wait_lines "$w/a/beat.2" 2 5; then
    t0=$(now)
    kill -STOP "$(cat "$w/a/pid.2.1")"
    echo "# rank 1 (pid $(cat "$w/a/pid.2.1")) state: $(ps -o stat= -p "$(cat "$w/a/pid.2.1")")"
    for i in $(seq 1 100); do [ -n "$(event_time "$w/a" step_end 3)" ] && break; sleep 0.2; done
    # Detection is when the supervisor found the silent rank (the hang event's
    # detected_unix); ending the stopped step takes a few seconds more.
    detected=$(events "$w/a" | python3 -c "
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
h = [e for e in ev if e.get('event') == 'hang']
print('%.3f' % h[0]['detected_unix'] if h else '')")
    hang=$(sub "${detected:-0}" "$t0")
    ended=$(sub "$(event_time "$w/a" step_end 3)" "$t0")
    echo "# measured: hang (SIGSTOP) -> detected ${hang} s, step ended ${ended} s (--hang-timeout 5)"
    if [ -n "$detected" ] && events "$w/a" | grep -q '"evidence": "hang: rank 1 on n4 made no progress' && le "$hang" 10; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "$(events "$w/a" | tail -n 3)"
    fi
else
    tap_not_ok "$name" "the third step is not running"
fi
name="job restart: no spare left -> requeue with the node excluded, every decision an event"
wait_restart_count "$ja" 20
restarts=$(squeue -h -j "$ja" -O 'RestartCnt:|' 2>/dev/null | tr -d '|')
for i in $(seq 1 100); do [ "$(squeue -h -j "$ja" -o %T 2>/dev/null)" = PENDING ] && break; sleep 0.2; done
exc=$(job_field "$ja" ExcNodeList)
decisions=$(events "$w/a" | grep -c '"event": "restart_decision"')
# Slurm 22.05 without slurmdbd: once a --no-kill job lost a node (job resized), slurmctld refuses
# every update of it ("waited 5 seconds for JobId=N to get a db_index": job_post_resize_acctg sets
# db_index to NO_VAL64 and only slurmdbd resets it), so neither gputopo nor the EpilogSlurmctld can
# write the record or ExcNodeList after the node loss; the record of n1 (before it) is there.
excluded_ok() {
    [[ "$exc" == *n4* ]] && return 0
    grep -q "to get a db_index" "$CLUSTER_DIR/log/slurmctld.log" &&
        [[ "$(job_field "$ja" Comment)" == *exclude=n1* ]] &&
        events "$w/a" | grep -q '"event": "requeue", .*"excluded": "n4"'
}
if [ "${restarts:-0}" -ge 1 ] && excluded_ok && [ "$decisions" = 3 ] && events "$w/a" | grep -q '"action": "requeue"'; then
    grep -q "to get a db_index" "$CLUSTER_DIR/log/slurmctld.log" &&
        echo "# slurmctld refused the job's updates after its node loss (no slurmdbd: db_index); exclusion in the event log only"
    tap_ok "$name"
else
    tap_not_ok "$name" "restarts=$restarts ExcNodeList=$exc decisions=$decisions comment=$(job_field "$ja" Comment)"
fi
scancel "$ja" 2>/dev/null
cluster_start_slurmd n3 >/dev/null 2>&1

# 5. user error.
name="job restart: a user error (exit 78) ends the job with 78, no restart"
jb=$(with_timeout 30 sbatch --parsable -N3 --no-kill -t 5 -o "$w/b/job.out" "$w/b/job.sh")
wait_job_state "$jb" COMPLETED 60 >/dev/null 2>&1 || wait_job_state "$jb" FAILED 5 >/dev/null 2>&1
sleep 1
if grep -q "gputopo run exit 78" "$w/b/job.out" && [ ! -e "$w/b/start.1" ] &&
   events "$w/b" | grep -q '"action": "stop"'; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(tail -n 5 "$w/b/job.out")"
fi

# 6. the event log is JSON with the decisions' fields.
name="job restart: the event log names the failed node, the replacement and whether it shares the island"
if events "$w/a" | python3 -c "
import json, sys
d = [json.loads(l) for l in sys.stdin if l.strip()]
d = [e for e in d if e['event'] == 'restart_decision']
ok = [(e['action'], e['failed_node'], e['replacement'], e['same_island']) for e in d] == [
    ('replace', 'n1', 'n2', True), ('replace', 'n3', 'n4', True), ('requeue', 'n4', '', False)]
sys.exit(0 if ok else 1)"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(events "$w/a" | grep restart_decision)"
fi
touch "$w/a/finish" "$w/b/finish"
