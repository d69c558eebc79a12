#!/usr/bin/env bash
# A real torch.distributed rendezvous (torch/train.py: gloo, init env://, all_reduce, one DDP
# step) where Slurm's rank order need not be the node list's (issue 32): a cluster of its own
# with topology/block and the blocks listed out of name order, b1=n[2,4], b2=n[1,3] (Slurm
# 26.05 places tasks in topology order: rank 0 on n2; 23.11-25.11 in node-list order), the
# nodes at distinct addresses (NodeAddr=127.0.0.N), and every training process listening on
# its own node's address alone (torch/node_bind.c, preloaded into the training processes
# only), so a MASTER_ADDR that is not the address of rank 0's node is refused, as on a real
# cluster. -N4, one rank per node:
#  1. srun --gpu-topo=closest   2. srun --gpu-topo=island
#  3. gputopo-launch alone      4. gputopo-launch --rank-order=island alone
# Each: every rank connects (torch's own rank and world), MASTER_ADDR is the address of the
# node that runs rank 0, RANK = GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK. Slurm 22.05 has
# no topology/block: the cases are skipped there.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
build=${1:-build}
tap_plan 4
PY=/usr/bin/python3
names=("closest" "island" "gputopo-launch alone" "gputopo-launch --rank-order=island alone")
running=$(sbatch --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$running" 23.11 | sort -V | head -n 1)" != 23.11 ]; then
    for n in "${names[@]}"; do tap_ok "torch order: $n: Slurm $running has no topology/block (23.11+) # SKIP"; done
    exit 0
fi
if ! $PY -c 'import torch.distributed' 2>/dev/null; then
    for n in "${names[@]}"; do tap_not_ok "torch order: $n" "no torch in $PY (GPUTOPO_RELEASE_EXTRA_PACKAGES=python3-torch)"; done
    exit 0
fi
# Our own cluster (another configuration than run.sh's).
unset CLUSTER_DIR
GPUTOPO_CLUSTER_TOPOLOGY=block GPUTOPO_CLUSTER_BLOCKS="b1=n[2,4] b2=n[1,3]" GPUTOPO_CLUSTER_NODE_ADDRS=distinct \
    cluster_start "$build" || { for n in "${names[@]}"; do tap_not_ok "torch order: $n" "cluster"; done; exit 0; }
w=$CLUSTER_DIR/tmp/torch-order
mkdir -p "$w"
gcc -O2 -Wall -shared -fPIC -o "$w/node_bind.so" "$here/torch/node_bind.c" -ldl ||
    { for n in "${names[@]}"; do tap_not_ok "torch order: $n" "could not build node_bind.so"; done; exit 0; }
cat > "$w/on_node.sh" <<EOS
#!/bin/sh
# The training process listens on its node's address alone; torch 2.4+ (Debian 13+) asks for
# libuv's TCPStore, which Debian's build lacks.
export GPUTOPO_TEST_NODE_ADDR=127.0.0.\${SLURMD_NODENAME#n} LD_PRELOAD=$w/node_bind.so USE_LIBUV=0 GLOO_SOCKET_IFNAME=lo
exec "\$@"
EOS
chmod +x "$w/on_node.sh"

# FILE: "" when FILE has 4 TORCHOK lines, ranks 0..3 of world 4, each with RANK = GROUP_RANK x
# LOCAL_WORLD_SIZE + LOCAL_RANK and MASTER_ADDR = 127.0.0.N of rank 0's node nN; else what is wrong.
check_ok() {
    $PY - "$1" "$running" <<'PY'
import sys
rows = [dict(kv.split("=", 1) for kv in l.split("TORCHOK ", 1)[1].split()) for l in open(sys.argv[1]) if "TORCHOK " in l]
errs = []
if sorted(int(r["rank"]) for r in rows) != [0, 1, 2, 3]:
    errs.append("ranks %s, expected 0..3" % sorted(r["rank"] for r in rows))
node0 = [r["node"] for r in rows if r["rank"] == "0"]
for r in rows:
    if r["world"] != "4":
        errs.append("rank %s: world %s" % (r["rank"], r["world"]))
    if node0 and r.get("master") != "127.0.0." + node0[0][1:]:
        errs.append("rank %s: MASTER_ADDR=%s, rank 0 runs on %s" % (r["rank"], r.get("master"), node0[0]))
    try:
        if int(r["group"]) * int(r["lws"]) + int(r["local"]) != int(r["rank"]):
            errs.append("rank %s: GROUP_RANK %s x LOCAL_WORLD_SIZE %s + LOCAL_RANK %s" % (r["rank"], r["group"], r["lws"], r["local"]))
    except ValueError:
        errs.append("rank %s: %s" % (r["rank"], r))
print("; ".join(errs))
PY
}

run_case() {  # NAME OUT CMD...
    local name=$1 out=$2 bad order
    shift 2
    if timeout 150 "$@" > "$out" 2> "$out.err"; then
        bad=$(check_ok "$out")
        order=$(grep -o 'TORCHOK .*' "$out" | sed 's/.*rank=\([0-9]*\).* node=\([a-z0-9]*\).*/\1 \2/' | sort -n | awk '{printf "%s ", $2}')
        echo "# $name: ranks 0-3 on $order(Slurm $running)"
        [ -z "$bad" ] && tap_ok "$name" || tap_not_ok "$name" "$bad" "$(tail -n 5 "$out.err")"
    else
        tap_not_ok "$name" "failed: $(grep -v '^\[W' "$out.err" | tail -n 8)"
    fi
}

T=$here/torch/train.py
L=$CLUSTER_BUILD/gputopo-launch
run_case "torch order: --gpu-topo=closest, blocks b1=n[2,4] b2=n[1,3], nodes at 127.0.0.N: every rank connects to rank 0's node" \
    "$w/closest" srun -N4 --ntasks-per-node=1 --gpus-per-task=1 --gpu-topo=closest "$w/on_node.sh" $PY "$T"
run_case "torch order: --gpu-topo=island: every rank connects to rank 0's node" \
    "$w/island" srun -N4 --ntasks-per-node=1 --gpus-per-task=1 --gpu-topo=island "$w/on_node.sh" $PY "$T"
plugstack_set_line ""
run_case "torch order: gputopo-launch alone (no plugin): every rank connects to rank 0's node" \
    "$w/launch" srun -N4 --ntasks-per-node=1 --gpus-per-task=1 "$L" --topology "$CLUSTER_DIR/topo/%n.xml" -- "$w/on_node.sh" $PY "$T"
run_case "torch order: gputopo-launch --rank-order=island alone: every rank connects to rank 0's node" \
    "$w/launch-island" srun -N4 --ntasks-per-node=1 --gpus-per-task=1 "$L" --topology "$CLUSTER_DIR/topo/%n.xml" \
    --rank-order=island -- "$w/on_node.sh" $PY "$T"
cluster_stop
exit 0
