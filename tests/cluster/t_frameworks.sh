#!/usr/bin/env bash
# What frameworks and other schedulers read, on the local cluster:
#  - gputopo-launch gives every rank torchrun's variables (GROUP_RANK,
#    NODE_RANK, GROUP_WORLD_SIZE, ROLE_*, TORCHELASTIC_*) from real srun values;
#  - --rank-order=island --island-procid: SLURM_PROCID is the island rank the
#    plugin computes (GPUTOPO_RANK), Slurm's in GPUTOPO_SLURM_PROCID;
#  - `gputopo labels` for every node equals the island the plugin gives its
#    tasks (GPUTOPO_ISLAND), for topology.conf leaves and gputopo.conf islands.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || { echo "not ok - frameworks: cluster"; exit 1; }
tap_plan 4
L=$CLUSTER_BUILD/gputopo-launch
G=$CLUSTER_BUILD/gputopo
etc=$CLUSTER_DIR/etc
w=$CLUSTER_DIR/tmp/frameworks.$$
mkdir -p "$w"
printf 'TopologyConf=topology.conf\n' > "$etc/gputopo-fw-tree.conf"
printf 'TopologyConf=topology.conf\nIsland=rackA Nodes=n[1,3]\nIsland=rackB Nodes=n[2,4]\n' > "$etc/gputopo-fw-override.conf"

# 1. torchrun's variables from srun's.
name="frameworks: torchrun-complete environment under srun (-N2, 2 tasks per node)"
probe='echo "FW $SLURM_PROCID $SLURM_NODEID $SLURM_JOB_ID $RANK $GROUP_RANK $NODE_RANK $GROUP_WORLD_SIZE $ROLE_RANK $ROLE_WORLD_SIZE $ROLE_NAME $TORCHELASTIC_RUN_ID $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS ${TORCHELASTIC_ERROR_FILE##*/}"'
if timeout 120 srun -N2 -n4 --ntasks-per-node=2 "$L" --max-restarts 5 --gpu-topo none -- bash -c "$probe" > "$w/env" 2> "$w/env.err"; then
    bad=$(python3 - "$w/env" <<'PY'
import sys
rows = [l.split()[1:] for l in open(sys.argv[1]) if l.startswith("FW ")]
errs = []
if len(rows) != 4:
    errs.append("expected 4 ranks, got %d" % len(rows))
for r in rows:
    procid, nodeid, job, rank, group, node_rank, gws, role_rank, rws, role, run_id, restarts, maxr, errfile = r
    want = [procid, nodeid, nodeid, "2", procid, "4", "default", job, "0", "5", "gputopo-error.%s.%s.json" % (job, procid)]
    got = [rank, group, node_rank, gws, role_rank, rws, role, run_id, restarts, maxr, errfile]
    if got != want:
        errs.append("rank %s: got %s, expected %s" % (procid, got, want))
print("; ".join(errs))
PY
)
    [ -z "$bad" ] && tap_ok "$name" || tap_not_ok "$name" "$bad"
else
    tap_not_ok "$name" "srun failed: $(tail -n 3 "$w/env.err")"
fi

# 2. --island-procid: SLURM_PROCID = the plugin's island rank.
name="frameworks: --island-procid gives SLURM_PROCID = GPUTOPO_RANK (islands across node names)"
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml islands=$etc/gputopo-fw-override.conf"
probe='echo "IP $SLURMD_NODENAME $GPUTOPO_SLURM_PROCID $SLURM_PROCID $GPUTOPO_RANK $RANK"'
if timeout 120 srun -N4 -n8 --ntasks-per-node=2 --gpus-per-node=2 --gpu-topo=island \
        "$L" --rank-order island --island-procid -- bash -c "$probe" > "$w/ip" 2> "$w/ip.err"; then
    bad=$(awk '$1 == "IP" { n++; if ($4 != $5 || $4 != $6) print $2 ": SLURM_PROCID " $4 " GPUTOPO_RANK " $5 " RANK " $6;
                             if ($3 != $4) moved++ } END { if (n != 8) print "expected 8 ranks, got " n;
                             if (moved == 0) print "no rank moved: the test cannot tell" }' "$w/ip")
    [ -z "$bad" ] && tap_ok "$name" || tap_not_ok "$name" "$bad" "$(cat "$w/ip")"
else
    tap_not_ok "$name" "srun failed: $(tail -n 3 "$w/ip.err")"
fi

# 3. Labels read back: the plugin's island per node equals the label.
for conf in gputopo-fw-tree.conf gputopo-fw-override.conf; do
    name="frameworks: gputopo labels equal the plugin's islands ($conf)"
    plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml islands=$etc/$conf"
    if ! timeout 120 srun -N4 -n4 --gpus-per-node=1 --gpu-topo=island bash -c 'echo "ISL $SLURMD_NODENAME $GPUTOPO_ISLAND"' \
            > "$w/isl" 2> "$w/isl.err"; then
        tap_not_ok "$name" "srun failed: $(tail -n 3 "$w/isl.err")"
        continue
    fi
    "$G" labels --nodes 'n[1-4]' --islands "$etc/$conf" --format json > "$w/labels.json" 2> "$w/labels.err"
    bad=$(python3 - "$w/isl" "$w/labels.json" <<'PY'
import json, sys
plugin = {l.split()[1]: l.split()[2] for l in open(sys.argv[1]) if l.startswith("ISL ")}
labels = {n["node"]: n["labels"].get("fabric.topograph.run/tier-0") for n in json.load(open(sys.argv[2]))["nodes"]}
print("" if plugin == labels and len(plugin) == 4 else "plugin %s, labels %s" % (plugin, labels))
PY
)
    [ -z "$bad" ] && tap_ok "$name" || tap_not_ok "$name" "$bad" "$(cat "$w/labels.err")"
done
plugstack_default
