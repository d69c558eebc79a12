#!/usr/bin/env bash
# End-to-end: islands across nodes on the local cluster (leaf1=n[1-2],
# leaf2=n[3-4] in topology.conf). Every task's GPUTOPO_ISLAND, _ISLAND_RANK,
# _ISLAND_SIZE, _NUM_ISLANDS and GPUTOPO_RANK against the island map written
# here by hand; gputopo.conf overriding topology.conf; islands= adding to Slurm's
# topology.conf; no islands= at all (Slurm's own topology.conf, from the conf-cache
# in configless mode);
# a broken islands file; the job_submit.lua switch count.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 14
cluster_ensure "${1:-build}" || { echo "not ok - islands: cluster"; exit 1; }

out=$CLUSTER_DIR/tmp/islands.$$
mkdir -p "$CLUSTER_DIR/tmp"
etc=$CLUSTER_DIR/etc
probe='echo "ISL ${SLURMD_NODENAME} ${GPUTOPO_ISLAND:-unset} ${GPUTOPO_ISLAND_RANK:-unset} ${GPUTOPO_ISLAND_SIZE:-unset} ${GPUTOPO_NUM_ISLANDS:-unset} ${GPUTOPO_RANK:-unset}"'

# run_islands NAME CONF -- SRUN-ARGS: runs the probe with islands=CONF;
# leaves "NODE ISLAND ISLAND_SIZE NUM_ISLANDS RANKS ISLAND_RANKS" per node (sorted) in $out.table.
run_islands() {
    local name=$1 conf=$2
    shift 3
    plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml${conf:+ islands=$conf}"
    if ! timeout 120 srun "$@" bash -c "$probe" > "$out" 2> "$out.err"; then
        tap_not_ok "$name" "srun $* failed: $(tail -n 3 "$out.err")"
        return 1
    fi
    # One row per node: its island, size and count, and its tasks' ranks.
    python3 - "$out" > "$out.table" <<'EOF'
import sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "ISL":
        rows[f[1]].append(f[2:])
for node in sorted(rows):
    t = rows[node]
    ranks = sorted(int(x[4]) if x[4] != "unset" else -1 for x in t)
    iranks = sorted(int(x[1]) if x[1] != "unset" else -1 for x in t)
    print(node, t[0][0], t[0][2], t[0][3], ",".join(map(str, ranks)), ",".join(map(str, iranks)))
EOF
}

# expect NAME "EXPECTED TABLE": compares $out.table with the expectation.
expect() {
    local name=$1 want=$2
    if [ "$(cat "$out.table")" = "$want" ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "got:" "$(cat "$out.table")" "expected:" "$want" "stderr: $(head -n 5 "$out.err")"
    fi
}

# gputopo.conf that only points at Slurm's topology.conf.
printf 'TopologyConf=topology.conf\n' > "$etc/gputopo-tree.conf"
# gputopo.conf overriding it: islands that cut across the leaf switches.
printf 'TopologyConf=topology.conf\nIsland=rackA Nodes=n[1,3]\nIsland=rackB Nodes=n[2,4]\n' > "$etc/gputopo-override.conf"
# Only n[1-2] known.
printf 'Island=pod1 Nodes=n[1-2]\n' > "$etc/gputopo-partial.conf"
# A malformed line.
printf 'Island=pod1 Nodes=n[1-2]\nIsland=pod2 Nodes=n[3-\n' > "$etc/gputopo-bad.conf"

# Inside one island: leaf2, 2 tasks per node. Ranks in Slurm's order.
name="islands: a job inside one leaf switch (n[3-4]): one island, Slurm's order"
run_islands "$name" "$etc/gputopo-tree.conf" -- -w n[3-4] -N2 -n4 --ntasks-per-node=2 --gpus-per-node=2 --gpu-topo=island &&
    expect "$name" "n3 leaf2 4 1 0,1 0,1
n4 leaf2 4 1 2,3 2,3"

# Across two islands: leaf1 then leaf2, by first appearance in the node list.
name="islands: a job across two leaf switches (n[1-4]): leaf1 ranks 0-3, leaf2 ranks 4-7"
run_islands "$name" "$etc/gputopo-tree.conf" -- -N4 -n8 --ntasks-per-node=2 --gpus-per-node=2 --gpu-topo=island &&
    expect "$name" "n1 leaf1 4 2 0,1 0,1
n2 leaf1 4 2 2,3 2,3
n3 leaf2 4 2 4,5 0,1
n4 leaf2 4 2 6,7 2,3"

# gputopo.conf overrides topology.conf and interleaves names: n1,n3 | n2,n4.
name="islands: gputopo.conf overrides topology.conf; ranks follow islands, not node names"
run_islands "$name" "$etc/gputopo-override.conf" -- -N4 -n8 --ntasks-per-node=2 --gpus-per-node=2 --gpu-topo=island &&
    expect "$name" "n1 rackA 4 2 0,1 0,1
n2 rackB 4 2 4,5 0,1
n3 rackA 4 2 2,3 2,3
n4 rackB 4 2 6,7 2,3"

# islands= adds to Slurm's own topology.conf (no TopologyConf= in it): pod1 from
# gputopo.conf, leaf2 from the topology.conf beside slurm.conf.
name="islands: islands= adds to Slurm's topology.conf: pod1 from gputopo.conf, leaf2 from Slurm's"
run_islands "$name" "$etc/gputopo-partial.conf" -- -N4 -n8 --ntasks-per-node=2 --gpus-per-node=2 --gpu-topo=island &&
    expect "$name" "n1 pod1 4 2 0,1 0,1
n2 pod1 4 2 2,3 2,3
n3 leaf2 4 2 4,5 0,1
n4 leaf2 4 2 6,7 2,3"

# Zero configuration: no islands= at all; the islands are the leaf switches of the
# topology.conf that the running Slurm reads (SLURM_CONF of slurmd/slurmstepd).
name="islands: no islands= argument: islands are the leaf switches of Slurm's own topology.conf"
run_islands "$name" "" -- -N4 -n8 --ntasks-per-node=2 --gpus-per-node=2 --gpu-topo=island,verbose &&
    # Configless: the copy slurmd fetched into its conf-cache (SLURM_CONF of slurmstepd).
    want_dir=$CLUSTER_DIR/etc
    [ "${CLUSTER_CONFIGLESS:-0}" = 1 ] && want_dir=$CLUSTER_DIR/spool/n1/conf-cache
    if grep -q "^gputopo: n1: islands from Slurm's $want_dir/topology.conf" "$out.err" &&
       grep -q '^gputopo: n3 task 0: .* xisland=leaf2 .*(topology.conf tree)' "$out.err"; then
        expect "$name" "n1 leaf1 4 2 0,1 0,1
n2 leaf1 4 2 2,3 2,3
n3 leaf2 4 2 4,5 0,1
n4 leaf2 4 2 6,7 2,3"
    else
        tap_not_ok "$name" "no 'islands from Slurm's' / 'topology.conf tree' in: $(head -n 4 "$out.err")"
    fi

# verbose shows the mapping.
name="islands: verbose shows island, island rank and global rank per task"
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml islands=$etc/gputopo-tree.conf"
if timeout 60 srun -N4 -n4 --ntasks-per-node=1 --gpus-per-node=1 --gpu-topo=island,verbose true > "$out" 2> "$out.err" &&
   grep -q '^gputopo: n3 task 0: .* xisland=leaf2 island_rank=0/2 rank=2/4 islands=2 (topology.conf tree)' "$out.err" &&
   [ "$(grep -c ' xisland=' "$out.err")" = 4 ]; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(head -n 6 "$out.err")"
fi

# A malformed islands file: one warning naming file and line, the job runs, no island variables.
name="islands: a malformed gputopo.conf gives one warning and the job runs without island variables"
run_islands "$name" "$etc/gputopo-bad.conf" -- -N2 -n2 --ntasks-per-node=1 --gpus-per-node=1 --gpu-topo=island &&
    if grep -q "gputopo-bad.conf:2: 'Island=pod2 Nodes=n\[3-'" "$out.err" && grep -q "no island variables" "$out.err" &&
       [ "$(awk '{print $4 "/" $5}' "$out.table" | sort -u)" = "unset/-1" ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "stderr: $(head -n 4 "$out.err")" "table: $(cat "$out.table")"
    fi

# An islands= file missing on the node (configless clusters do not ship it): one warning
# naming the file, the job runs.
name="islands: an islands= file absent on the node gives one warning naming it; the job runs"
run_islands "$name" "$etc/not-shipped-gputopo.conf" -- -N2 -n2 --ntasks-per-node=1 --gpus-per-node=1 --gpu-topo=island &&
    if [ "$(grep -c "cannot read gputopo.conf '$etc/not-shipped-gputopo.conf'" "$out.err")" = 2 ] &&
       [ "$(grep -c '^ISL' "$out")" = 2 ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "stderr: $(head -n 4 "$out.err")"
    fi

# Mode closest: no cross-node island variables even with islands=.
name="islands: mode closest sets no cross-node island variables"
run_islands "$name" "$etc/gputopo-tree.conf" -- -N2 -n2 --ntasks-per-node=1 --gpus-per-node=1 --gpu-topo=closest &&
    if [ "$(awk '{print $4 "/" $5}' "$out.table" | sort -u)" = "unset/-1" ]; then tap_ok "$name"; else tap_not_ok "$name" "$(cat "$out.table")"; fi

# gputopo-launch --rank-order=island: RANK follows GPUTOPO_RANK (set by the plugin), and
# without the plugin the launcher computes it from --islands.
launch_probe='echo "L ${SLURMD_NODENAME} ${RANK:-unset} ${GPUTOPO_RANK:-unset} ${SLURM_PROCID}"'
check_launch() {
    # every line: RANK equals the expected island rank of (node, procid) given as "node:procid:rank ..."
    python3 - "$out" "$1" <<'EOF2'
import sys
want = {}
for w in sys.argv[2].split():
    n, p, r = w.split(":")
    want[(n, p)] = r
got = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "L":
        got[(f[1], f[4])] = f[2]
sys.exit(0 if got == want else 1)
EOF2
}
# override islands: rackA = n1,n3; rackB = n2,n4; one task per node: procid 0..3 on n1..n4.
expected_launch="n1:0:0 n2:1:2 n3:2:1 n4:3:3"
name="islands: gputopo-launch --rank-order=island sets RANK = GPUTOPO_RANK from the plugin"
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml islands=$etc/gputopo-override.conf"
if timeout 120 srun -N4 -n4 --ntasks-per-node=1 --gpus-per-node=1 --gpu-topo=island \
        "$CLUSTER_BUILD/gputopo-launch" --rank-order=island -- bash -c "$launch_probe" > "$out" 2> "$out.err" &&
   check_launch "$expected_launch" && ! awk '$1 == "L" && $3 != $4 {bad=1} END {exit !bad}' "$out"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep '^L' "$out")" "$(head -n 3 "$out.err")"
fi
name="islands: gputopo-launch --rank-order=island --islands FILE without the plugin"
plugstack_set_line ""
if timeout 120 srun -N4 -n4 --ntasks-per-node=1 \
        "$CLUSTER_BUILD/gputopo-launch" --gpu-topo=none --rank-order=island --islands "$etc/gputopo-override.conf" \
        -- bash -c "$launch_probe" > "$out" 2> "$out.err" && check_launch "$expected_launch"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep '^L' "$out")" "$(head -n 3 "$out.err")"
fi
plugstack_default  # sbatch needs the plugin for --gpu-topo

# job_submit.lua: as few switches as the job fits in (2 nodes per leaf here), bounded wait.
switches_of() {
    local job
    job=$(sbatch --parsable --hold "$@" --wrap true 2>"$out.err") || { echo "sbatch failed: $(cat "$out.err")"; return; }
    scontrol show job "$job" | grep -o 'Switches=[^ ]*'
    scancel "$job" 2>/dev/null
}
name="islands: job_submit.lua asks for 1 switch for a 2-node --gpu-topo=island job"
got=$(switches_of -N2 --gpu-topo=island)
case "$got" in Switches=1@00:0*) tap_ok "$name" ;; *) tap_not_ok "$name" "got '$got'" ;; esac
name="islands: job_submit.lua asks for 2 switches for a 3-node --gpu-topo=island job (leaves of 2 nodes)"
got=$(switches_of -N3 --gpu-topo=island)
case "$got" in Switches=2@00:0*) tap_ok "$name" ;; *) tap_not_ok "$name" "got '$got'" ;; esac
name="islands: job_submit.lua keeps the user's own --switches"
got=$(switches_of -N2 --switches=2@5 --gpu-topo=island)  # WAIT 5 = 5 minutes
case "$got" in Switches=2@00:05:00) tap_ok "$name" ;; *) tap_not_ok "$name" "got '$got'" ;; esac

plugstack_default
rm -f "$out" "$out.err" "$out.table"
exit 0
