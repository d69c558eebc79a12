#!/usr/bin/env bash
# gputopo run's checkpoint replica peers with a real PyTorch program
# (examples/pytorch/train_replicas.py: DDP over gloo, each rank's shard saved to
# node-local storage every 5 steps and copied to its replica peer over
# torch.distributed, to the shared directory every 2nd checkpoint), on the
# default cluster (topology/tree leaf1=n[1-2], leaf2=n[3-4]).
# sbatch -N4 --ntasks-per-node=2, `gputopo run --spares 2`: slots n1 (ranks 0,1),
# n3 (ranks 2,3), spares n2, n4. Node-local storage: $w/local/NODE.
#  1. the peers: n1 and n3 keep each other's replica (other leaf switches, NVRx
#     pairs with replication_jump 2), recorded in the replica_peers event;
#  2. once checkpoint 15 is everywhere, the shared directory is made unreadable
#     (a regular file in its place: every open under it fails, for root too) and
#     n1 is lost (its ranks SIGKILLed, its node-local storage removed): n2 takes
#     its slot, is told its predecessor's replica is on n3, and ranks 0,1 on n2
#     receive their shards from n3 while ranks 2,3 read theirs from n3's local
#     storage: every rank resumes at the last reported checkpoint with the
#     checksum its shard had when saved, no open under the shared directory
#     (the program's audit hook), and the training runs to its end (step 25).
# Prints the measured restore and restart times ("# measured ...").
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
. "$here/job_timing.sh"
build=${1:-build}
tap_plan 2
PY=/usr/bin/python3
if ! $PY -c 'import torch.distributed' 2>/dev/null; then
    for i in 1 2; do tap_not_ok "job replicas: case $i" "no torch in $PY (make deps installs python3-torch)"; done
    exit 0
fi
unset CLUSTER_DIR
cluster_start "$build" || { echo "not ok - job replicas: cluster"; exit 1; }
G=$CLUSTER_BUILD/gputopo
w=$CLUSTER_DIR/tmp/job-replicas.$$
mkdir -p "$w/local" "$w/shared"
chmod 755 "$CLUSTER_DIR/tmp" "$w"
log=$w/replicas.log
# rec KIND ATTEMPT: the record lines of KIND ("ckpt", "restore", "step1") of ATTEMPT.
rec() { grep "^$1 " "$log" 2>/dev/null | grep " attempt=$2 "; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

cat > "$w/job.sh" <<EOS
#!/bin/bash
export PYTHONPATH=$CLUSTER_SRC/python PYTHONDONTWRITEBYTECODE=1
exec $G run --spares 2 --max-restarts 3 --kill-timeout 15 --state-dir $w/state -- \
    $PY $CLUSTER_SRC/examples/pytorch/train_replicas.py --shared $w/shared --local $w/local/%n \
    --steps 25 --save-every 5 --persist-every 2 --record $w --pace 0.2
EOS
j=$(with_timeout 30 sbatch --parsable -N4 --ntasks-per-node=2 --no-kill -t 10 -o "$w/job.out" "$w/job.sh")

# 1. the peers.
name="job replicas: n1 and n3 (two leaf switches) keep each other's replica: NVRx pairs, replication_jump 2, one event"
if wait_lines "$log" 4 120 && ev "$w" "e['event'] == 'replica_peers' and e['attempt'] == 0 and e['rule'] == 'pairs' and e['assignments'] == 'n1>n3,n3>n1' and e['replication_jump'] == 2 and e['same_domain'] == 0"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(events "$w" | grep replica_peers | head -n 2) $(tail -n 5 "$w/job.out" 2>/dev/null)"
fi

# 2. n1 lost after checkpoint 15, the shared directory unreadable.
name="job replicas: n1 lost -> n2 restores ranks 0,1 from n3, ranks 2,3 from local storage, at the last checkpoint with identical checksums, nothing opened in the shared directory"
for i in $(seq 1 600); do [ "$(rec ckpt 0 | grep -c ' step=15 ')" -ge 4 ] && break; sleep 0.1; done
mv "$w/shared" "$w/shared.hidden" && touch "$w/shared"
t0=$(now)
kill -KILL $(rec step1 0 | grep ' node=n1' | field pid) 2>/dev/null
rm -rf "$w/local/n1"
# The checkpoint the next attempt is given: the report once the step has ended (the
# new step reports its next one only after it has restored and trained 5 steps).
for i in $(seq 1 600); do ev "$w" "e['event'] == 'restart_decision'" && break; sleep 0.1; done
reported=$(sed -n 's/^step-\([0-9]*\)$/\1/p' "$w/state/checkpoint" 2>/dev/null)
for i in $(seq 1 1200); do [ "$(rec step1 1 | wc -l)" -ge 4 ] && break; sleep 0.1; done
for i in $(seq 1 600); do grep -q "^done " "$log" && break; sleep 0.1; done
ok=1 why=""
[ "$(rec restore 1 | wc -l)" = 4 ] || { ok=0; why="restore lines: $(rec restore 1 | wc -l);"; }
while read -r line; do
    r=$(echo "$line" | field rank) s=$(echo "$line" | field step) sha=$(echo "$line" | field sha)
    src=$(echo "$line" | field source) n=$(echo "$line" | field node) opens=$(echo "$line" | field shared_opens)
    saved=$(rec ckpt 0 | grep " rank=$r " | grep " step=$s " | field sha | head -n 1)
    want=local; [ "$n" = n2 ] && want=peer:n3
    if [ "$s" != "$reported" ] || [ "$sha" != "$saved" ] || [ "$src" != "$want" ] || [ "$opens" != 0 ] ||
       { [ "$r" -lt 2 ] && [ "$n" != n2 ]; } || { [ "$r" -ge 2 ] && [ "$n" != n3 ]; }; then
        ok=0 why="$why rank $r: $line (saved sha $saved, reported step $reported, want source $want);"
    fi
done < <(rec restore 1)
echo "# measured: restore from the peer (ranks on n2) $(rec restore 1 | grep ' node=n2' | field seconds | tr '\n' ' ')s, from local storage (n3) $(rec restore 1 | grep ' node=n3' | field seconds | tr '\n' ' ')s; fault -> first step completed $(sub "$(rec step1 1 | field unix | sort -n | tail -n 1)" "$t0") s"
if [ "$ok" = 1 ] && [ -n "$reported" ] && [ "$reported" -ge 15 ] &&
   ev "$w" "e['event'] == 'restart_decision' and e['action'] == 'replace' and e['failed_node'] == 'n1' and e['replacement'] == 'n2'" &&
   ev "$w" "e['event'] == 'replica_peers' and e['attempt'] == 1 and e['assignments'] == 'n2>n3,n3>n2' and e['restores'] == 'n2<n3 (was n1)'" &&
   grep -q "^done step=25 " "$log"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$why $(events "$w" | grep -E 'replica|decision' | tail -n 3) $(grep -v IPv6 "$w/job.out" | tail -n 8 | tr '\n' ';')"
fi
# The job ends by itself after step 25 (else it is cancelled); nothing of it is left running.
wait_job_state "$j" COMPLETED 30 >/dev/null 2>&1 || { scancel "$j" 2>/dev/null; wait_job_state "$j" CANCELLED 30 >/dev/null 2>&1; }
exit 0
