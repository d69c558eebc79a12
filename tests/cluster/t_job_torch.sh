#!/usr/bin/env bash
# gputopo run with a real PyTorch training job (tests/cluster/torch/train_run.py: DDP
# over gloo, a checkpoint every 10 steps, gputopo_run.heartbeat(step) from the loop
# only), on its own cluster (SlurmdTimeout=40; topology/tree leaf1=n[1-2],
# leaf2=n[3-4]). Everything checked is read from the ranks themselves (their
# RANK, node and the checkpoint they resumed from, the steps rank 0 trained) and
# from gputopo run's event log.
# Job A, a GPU job (sbatch -N4 --ntasks-per-node=2 --gpus-per-node=2 --no-kill
# --requeue), `gputopo run --spares 2 --hang-timeout 8 --srun-arg=--gpu-topo=island`:
# slots n1 (ranks 0,1), n3 (ranks 2,3); spares n2 (leaf1), n4 (leaf2).
#  1. rank 1 hangs in its own code at step 25 (the others wait in backward's
#     allreduce): the hang is blamed on rank 1 / n1, not on a rank whose file is
#     older; n2 takes n1's slot; the training resumes from step 20, every step after
#     it trained once; ranks 2,3 stay on n3 with RANK 2,3 (island mode);
#  2. n2 dies (slurmd, its slurmstepd and its ranks SIGKILLed): its peers die of it
#     first; n2 is the node replaced (by n4), the new GPU step is created (on 22.05
#     only with --overlap: n3, after n2, keeps GPUs counted as the dead step's), the
#     training resumes from the last checkpoint;
# Job B, sbatch -N2 --no-kill --requeue, `gputopo run --spares 1`:
#  3. rank 1 (n3; n2 is the spare) raises ZeroDivisionError at step 8: the job ends with 1, no spare
#     used, not requeued, the tool names the exception, rank and node.
# Prints the measured times ("# measured ...").
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
. "$here/job_timing.sh"
build=${1:-build}
tap_plan 3
PY=/usr/bin/python3
if ! $PY -c 'import torch.distributed' 2>/dev/null; then
    for i in 1 2 3; do tap_not_ok "job torch: case $i" "no torch in $PY (make deps installs python3-torch)"; done
    exit 0
fi
unset CLUSTER_DIR
GPUTOPO_CLUSTER_SLURMD_TIMEOUT=40 cluster_start "$build" || { echo "not ok - job torch: cluster"; exit 1; }
G=$CLUSTER_BUILD/gputopo
w=$CLUSTER_DIR/tmp/job-torch.$$
mkdir -p "$w/a" "$w/b"
chmod 755 "$CLUSTER_DIR/tmp" "$w" "$w/a" "$w/b"
# on_node FILE NODE: the RANKs FILE's lines give for NODE, sorted.
on_node() { grep " node=$2 " "$1" 2>/dev/null | sed -n 's/^rank=\([0-9]*\) .*/\1/p' | sort -n | tr '\n' ' '; }
# steps_ok FILE FROM: FILE's steps are FROM+1, FROM+2, ... each once.
steps_ok() {
    python3 -c "
import sys
s = [int(l.split('=')[1]) for l in open(sys.argv[1]) if l.startswith('step=')]
sys.exit(0 if s and s == list(range(int(sys.argv[2]) + 1, int(sys.argv[2]) + 1 + len(s))) else 1)" "$1" "$2"
}
resumed_from() { sed -n 's/.* ckpt=[^ ]*step-\([0-9]*\)\.pt .*/\1/p' "$1" 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//'; }

cat > "$w/a/job.sh" <<EOS
#!/bin/bash
export PYTHONPATH=$CLUSTER_SRC/python PYTHONDONTWRITEBYTECODE=1 TRAIN_PACE=0.15
exec $G run --spares 2 --max-restarts 5 --hang-timeout 8 --kill-timeout 15 \
    --srun-arg=--gpu-topo=island --state-dir $w/a/state -- $PY $here/torch/train_run.py $w/a 100000 10
EOS
echo "hang 1 25" > "$w/a/fault.0"
ja=$(with_timeout 30 sbatch --parsable -N4 --ntasks-per-node=2 --gpus-per-node=2 --no-kill --requeue -t 15 -o "$w/a/job.out" "$w/a/job.sh")

# 1. a hang in rank 1's own code.
name="job torch: rank 1 hangs in its own code -> blamed (not a waiting rank), n2 takes n1's slot, resumed from step 20, ranks kept"
if wait_lines "$w/a/start.0" 4 120; then
    for i in $(seq 1 600); do ev "$w/a" "e['event'] == 'hang'" && break; sleep 0.2; done
    wait_lines "$w/a/start.1" 4 90; wait_lines "$w/a/steps.1" 3 60
    detected=$(events "$w/a" | python3 -c "
import json, sys
h = [e for e in (json.loads(l) for l in sys.stdin if l.strip()) if e.get('event') == 'hang']
print(h[0]['silent_s'] if h else '')")
    echo "# measured: hang in own code -> detected after ${detected:-?} s of no progress (--hang-timeout 8)"
    if ev "$w/a" "e['event'] == 'hang' and e['rank'] == 1 and e['node'] == 'n1'" &&
       ev "$w/a" "e['event'] == 'restart_decision' and e['action'] == 'replace' and e['failed_node'] == 'n1' and e['replacement'] == 'n2'" &&
       [ "$(on_node "$w/a/start.0" n1)" = "0 1 " ] && [ "$(on_node "$w/a/start.0" n3)" = "2 3 " ] &&
       [ "$(on_node "$w/a/start.1" n2)" = "0 1 " ] && [ "$(on_node "$w/a/start.1" n3)" = "2 3 " ] &&
       [ "$(resumed_from "$w/a/start.1")" = 20 ] && steps_ok "$w/a/steps.1" 20; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "start.0: $(tr '\n' ';' < "$w/a/start.0" 2>/dev/null) start.1: $(tr '\n' ';' < "$w/a/start.1" 2>/dev/null) $(events "$w/a" | grep -E 'hang|decision' | tail -n 3)"
    fi
else
    tap_not_ok "$name" "the first step did not start: $(tail -n 5 "$w/a/job.out" 2>/dev/null)"
fi

# 2. n2 dies.
name="job torch: n2 dies (slurmd, slurmstepd, ranks SIGKILLed) -> n2 is replaced (by n4), not a peer's node; the GPU step is created; resumed from the last checkpoint"
if wait_lines "$w/a/steps.1" 12 60; then
    t0=$(now)
    r0=$(cat "$w/a/pid.1.0"); r1=$(cat "$w/a/pid.1.1")
    kill -KILL "$(cat "$CLUSTER_DIR/run/slurmd-n2.pid")" "$(ps -o ppid= -p "$r0" | tr -d ' ')" "$r0" "$r1" 2>/dev/null
    wait_lines "$w/a/start.2" 4 150; wait_lines "$w/a/steps.2" 3 60
    restarted=$(sub "$(date -r "$w/a/start.2" +%s.%N 2>/dev/null || echo 0)" "$t0")
    echo "# measured: node loss -> every rank of the new step started ${restarted} s"
    ckpt=$(resumed_from "$w/a/start.2")
    if ev "$w/a" "e['event'] == 'step_end' and e['attempt'] == 1 and e['class'] == 'node_fault' and e['node'] == 'n2'" &&
       ev "$w/a" "e['event'] == 'restart_decision' and e['action'] == 'replace' and e['failed_node'] == 'n2' and e['replacement'] == 'n4'" &&
       [ "$(on_node "$w/a/start.2" n4)" = "0 1 " ] && [ "$(on_node "$w/a/start.2" n3)" = "2 3 " ] &&
       [ -n "$ckpt" ] && [ "$ckpt" -ge 30 ] && steps_ok "$w/a/steps.2" "$ckpt"; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "start.2: $(tr '\n' ';' < "$w/a/start.2" 2>/dev/null) $(events "$w/a" | grep -E 'step_end|decision' | tail -n 3)"
    fi
else
    tap_not_ok "$name" "the second step is not training"
fi
scancel "$ja" 2>/dev/null
wait_job_state "$ja" CANCELLED 30 >/dev/null 2>&1
cluster_start_slurmd n2 >/dev/null 2>&1

# 3. a user bug.
name="job torch: a ZeroDivisionError on rank 1 ends the job with 1: no spare used, not requeued, the exception named"
cat > "$w/b/job.sh" <<EOS
#!/bin/bash
export PYTHONPATH=$CLUSTER_SRC/python PYTHONDONTWRITEBYTECODE=1 TRAIN_PACE=0.05
$G run --spares 1 --max-restarts 3 --state-dir $w/b/state -- $PY $here/torch/train_run.py $w/b 100000 5
echo "gputopo run exit \$?"
EOS
echo "bug 1 8" > "$w/b/fault.0"
t0=$(now)
jb=$(with_timeout 30 sbatch --parsable -N3 --no-kill --requeue -t 5 -o "$w/b/job.out" "$w/b/job.sh")
for i in $(seq 1 600); do grep -q "gputopo run exit" "$w/b/job.out" 2>/dev/null && break; sleep 0.2; done
echo "# measured: user bug job -> ended $(sub "$(now)" "$t0") s after submission"
sleep 1
if grep -q "gputopo run exit 1" "$w/b/job.out" && [ ! -e "$w/b/start.1" ] &&
   grep -q "user_error: rank 1 on n3: ZeroDivisionError: division by zero" "$w/b/job.out" &&
   ev "$w/b" "e['event'] == 'restart_decision' and e['action'] == 'stop'" &&
   ! ev "$w/b" "e['event'] == 'restart_decision' and e['action'] in ('replace', 'requeue')" &&
   [ "$(job_field "$jb" Restarts)" = 0 ]; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep -v 'IPv6' "$w/b/job.out" | tail -n 25 | tr '\n' ';') restarts=$(job_field "$jb" Restarts)"
fi
