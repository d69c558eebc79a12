#!/usr/bin/env bash
# End-to-end: a parallel layout on the local cluster (islands rackA = n1,n3 and
# rackB = n2,n4 cut across Slurm's node order). Every task's RANK from
# gputopo-launch --layout against `gputopo ranks --layout --format json` for the
# same step, and the framework's groups (Megatron's formula, written here in
# Python) where the placement says: TP groups on one node, DP groups in one
# island. The plugin alone (--gpu-topo=island,tp=..,pp=..): every task's RANK,
# GPUTOPO_RANK, ROLE_RANK, GROUP_RANK and NODE_RANK as the tasks had them,
# checked by check_layout.py against the placement `gputopo ranks --layout`
# prints (the ranks of each node, the groups of the framework's formula that
# straddle), for Megatron's order and a stated one; a layout that does not
# divide the step keeps SLURM_PROCID there too. sbatch
# --gpu-topo=island,tp=..,pp=.. is accepted by the plugin and job_submit.lua
# (topology/tree here: it still asks for --switches).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 6
cluster_ensure "${1:-build}" || { echo "not ok - layout: cluster"; exit 1; }

out=$CLUSTER_DIR/tmp/layout.$$
mkdir -p "$CLUSTER_DIR/tmp"
etc=$CLUSTER_DIR/etc
printf 'Island=rackA Nodes=n[1,3]\nIsland=rackB Nodes=n[2,4]\n' > "$etc/gputopo-layout.conf"
probe='echo "L ${SLURMD_NODENAME} ${SLURM_LOCALID} ${RANK:-unset} ${SLURM_STEP_NODELIST} ${SLURM_STEP_TASKS_PER_NODE}"'

name="layout: gputopo-launch --layout tp=2,pp=2 gives every task the rank gputopo ranks --layout prints"
plugstack_set_line ""
if timeout 120 srun -N4 -n8 --ntasks-per-node=2 \
        "$CLUSTER_BUILD/gputopo-launch" --gpu-topo=none --layout tp=2,pp=2 --islands "$etc/gputopo-layout.conf" \
        -- bash -c "$probe" > "$out" 2> "$out.err" &&
   nodes=$(awk '$1 == "L" {print $5; exit}' "$out") && counts=$(awk '$1 == "L" {print $6; exit}' "$out") &&
   "$CLUSTER_BUILD/gputopo" ranks --nodes "$nodes" --tasks-per-node "$counts" --islands "$etc/gputopo-layout.conf" \
        --layout tp=2,pp=2 --format json > "$out.json" 2>> "$out.err" &&
   python3 - "$out" "$out.json" > "$out.check" 2>&1 <<'EOF'
import json, sys
got = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "L":
        got[(f[1], int(f[2]))] = int(f[3])
doc = json.load(open(sys.argv[2]))
want = {}
for row in doc["nodes"]:
    for local, rank in enumerate(row["ranks"]):
        want[(row["node"], local)] = rank
if got != want:
    print("ranks differ: got", sorted(got.items()), "want", sorted(want.items()))
    sys.exit(1)
node_of = {r: n for (n, _), r in got.items()}
island = {"n1": "rackA", "n3": "rackA", "n2": "rackB", "n4": "rackB"}
world, tp, pp = 8, 2, 2
dp = world // (tp * pp)
# Megatron's default order tp-cp-ep-dp-pp: rank = t + tp * (d + dp * p)
for p in range(pp):
    for d in range(dp):
        g = [t + tp * (d + dp * p) for t in range(tp)]
        if len({node_of[r] for r in g}) != 1:
            print("TP group", g, "spans", {node_of[r] for r in g}); sys.exit(1)
    for t in range(tp):
        g = [t + tp * (d + dp * p) for d in range(dp)]
        if len({island[node_of[r]] for r in g}) != 1:
            print("DP group", g, "spans", {island[node_of[r]] for r in g}); sys.exit(1)
EOF
then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep '^L' "$out" | head -n 8)" "$(cat "$out.check" 2>/dev/null)" "$(head -n 3 "$out.err")"
fi

name="layout: a layout that does not divide the step leaves RANK = SLURM_PROCID and says why"
if timeout 120 srun -N3 -n3 --ntasks-per-node=1 \
        "$CLUSTER_BUILD/gputopo-launch" --gpu-topo=none --layout tp=2,pp=2 --islands "$etc/gputopo-layout.conf" \
        -- bash -c 'echo "L ${SLURM_PROCID} ${RANK:-unset}"' > "$out" 2> "$out.err" &&
   grep -q "not a multiple of tp\*cp\*ep\*pp = 4" "$out.err" && ! awk '$1 == "L" && $2 != $3 {bad=1} END {exit !bad}' "$out"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(cat "$out")" "$(head -n 3 "$out.err")"
fi

# The plugin alone: islands= the same file; each task prints what it has.
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml islands=$etc/gputopo-layout.conf"
fprobe='echo "L ${SLURMD_NODENAME} ${SLURM_LOCALID} ${RANK:-unset} ${GPUTOPO_RANK:-unset} ${ROLE_RANK:-unset} ${GROUP_RANK:-unset} ${NODE_RANK:-unset} ${WORLD_SIZE:-unset} ${LOCAL_WORLD_SIZE:-unset} ${SLURM_STEP_NODELIST} ${SLURM_STEP_TASKS_PER_NODE}"'
# plugin_layout NAME LAYOUT SRUN-ARGS...: runs the probe under --gpu-topo=island,LAYOUT and checks it.
plugin_layout() {
    local name=$1 layout=$2 nodes counts
    shift 2
    if timeout 120 srun "$@" --gpu-topo="island,$layout" bash -c "$fprobe" > "$out" 2> "$out.err" &&
       nodes=$(awk '$1 == "L" {print $11; exit}' "$out") && counts=$(awk '$1 == "L" {print $12; exit}' "$out") &&
       "$CLUSTER_BUILD/gputopo" ranks --nodes "$nodes" --tasks-per-node "$counts" --islands "$etc/gputopo-layout.conf" \
            --layout "$layout" --format json > "$out.json" 2>> "$out.err" &&
       python3 "$here/check_layout.py" "$out" "$out.json" "$layout" n1=rackA,n3=rackA,n2=rackB,n4=rackB > "$out.check" 2>&1
    then
        tap_ok "$name"
    else
        tap_not_ok "$name" "$(grep '^L' "$out" | head -n 16)" "$(cat "$out.check" 2>/dev/null)" "$(head -n 3 "$out.err")"
    fi
}
plugin_layout "layout: the plugin's --gpu-topo=island,tp=2,pp=2 sets RANK, GROUP_RANK from the placement; Megatron's groups land where it says" \
    tp=2,pp=2 -N4 -n8 --ntasks-per-node=2 --gpus-per-task=1
plugin_layout "layout: the plugin with order=tp-cp-ep-pp-dp: the stated order's groups land where the placement says" \
    tp=2,pp=2,order=tp-cp-ep-pp-dp -N4 -n8 --ntasks-per-node=2 --gpus-per-task=1

name="layout: the plugin with a layout that does not divide the step keeps RANK = SLURM_PROCID and says why"
if timeout 120 srun -N3 -n3 --ntasks-per-node=1 --gpus-per-task=1 --gpu-topo=island,tp=2,pp=2 \
        bash -c 'echo "L ${SLURM_PROCID} ${RANK:-unset} ${GPUTOPO_RANK:-unset}"' > "$out" 2> "$out.err" &&
   grep -q "not a multiple of tp\*cp\*ep\*pp = 4.*RANK stays SLURM_PROCID" "$out.err" &&
   [ "$(grep -c '^L' "$out")" = 3 ] && ! awk '$1 == "L" && ($2 != $3 || $4 != "unset") {bad=1} END {exit !bad}' "$out"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(cat "$out")" "$(head -n 3 "$out.err")"
fi
plugstack_default  # sbatch needs the plugin for --gpu-topo

name="layout: sbatch --gpu-topo=island,tp=2,pp=2 is accepted; job_submit.lua keeps --switches on topology/tree"
job=$(sbatch --parsable --hold -N2 --gpu-topo=island,tp=2,pp=2 --wrap true 2>"$out.err")
got=$( [ -n "$job" ] && scontrol show job "$job" | grep -o 'Switches=[^ ]*')
[ -n "$job" ] && scancel "$job" 2>/dev/null
case "$got" in Switches=1@00:0*) tap_ok "$name" ;; *) tap_not_ok "$name" "got '$got'" "$(head -n 3 "$out.err")" ;; esac
rm -f "$out" "$out.err" "$out.json" "$out.check"
