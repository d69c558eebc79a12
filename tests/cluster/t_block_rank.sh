#!/usr/bin/env bash
# TopologyParam=BlockAsNodeRank (topology/block; issue 32): Slurm 25.11+ orders its node table
# block by block, so a step's tasks go block by block; earlier releases ignore the word (24.11
# keeps node-list order). A cluster of its own with the blocks listed out of name order,
# b1=n[2,4] b2=n[1,3], the nodes at distinct addresses (NodeAddr=127.0.0.N), -N4 one task per
# node, --gpu-topo=island,verbose; read from each task:
#  1. Slurm's order: on 25.11+ ranks 0,1 on b1's nodes, 2,3 on b2's; before, n1..n4 (SLURM_NODEID
#     per node is printed, as Slurm numbers it there).
#  2. island mode: on 25.11+ it keeps Slurm's ranks (RANK = SLURM_PROCID in every task) and
#     verbose says so ("(Slurm's ranks)") once per task; before, it orders the ranks island by
#     island itself (ranks 0,1 in one block, 2,3 in the other) and keeps nothing.
#  3. GROUP_RANK is the node's place in the order RANK follows (RANK = GROUP_RANK x
#     LOCAL_WORLD_SIZE + LOCAL_RANK) and MASTER_ADDR is the address of the node that runs RANK 0.
# Slurm 22.05 has no topology/block: skipped there.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
build=${1:-build}
tap_plan 3
names=("block rank: BlockAsNodeRank, blocks b1=n[2,4] b2=n[1,3]: Slurm's own order (25.11+: block by block; before: node list)"
       "block rank: island mode keeps Slurm's ranks where they go block by block (and says so), else orders them by island"
       "block rank: GROUP_RANK is the node's place in the order RANK follows, MASTER_ADDR the node of RANK 0")
running=$( { slurmd -V || sbatch --version; } 2>/dev/null | awk '{print $2; exit}')
at_least() { [ "$(printf '%s\n%s\n' "$running" "$1" | sort -V | head -n 1)" = "$1" ]; }
if ! at_least 23.11; then
    for n in "${names[@]}"; do tap_ok "$n: Slurm $running has no topology/block (23.11+) # SKIP"; done
    exit 0
fi
unset CLUSTER_DIR
GPUTOPO_CLUSTER_TOPOLOGY=block GPUTOPO_CLUSTER_BLOCKS="b1=n[2,4] b2=n[1,3]" GPUTOPO_CLUSTER_NODE_ADDRS=distinct \
    GPUTOPO_EXTRA_SLURM_CONF="TopologyParam=BlockAsNodeRank" cluster_start "$build" ||
    { for n in "${names[@]}"; do tap_not_ok "$n" "cluster"; done; exit 0; }
w=$CLUSTER_DIR/tmp/block-rank
mkdir -p "$w"
out=$w/out
with_timeout 90 srun -N4 --ntasks-per-node=1 --gpus-per-task=1 --gpu-topo=island,verbose sh -c \
    'echo "RK procid=$SLURM_PROCID rank=${RANK-} group=${GROUP_RANK-} local=${LOCAL_RANK-} lws=${LOCAL_WORLD_SIZE-} nodeid=$SLURM_NODEID node=$SLURMD_NODENAME master=${MASTER_ADDR-} nodelist=$SLURM_STEP_NODELIST"' \
    > "$out" 2> "$out.err"
rc=$?
# field ROW KEY
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<< "$1"; }
rows=$(grep '^RK ' "$out" | sort -t= -k2 -n)
echo "# Slurm $running, TopologyParam=BlockAsNodeRank, SLURM_STEP_NODELIST=$(field "$(head -n 1 <<< "$rows")" nodelist): $(while read -r r; do printf '%s ' "$(field "$r" node):procid=$(field "$r" procid),nodeid=$(field "$r" nodeid)"; done <<< "$rows")"
# nodes_of KEY A B: the nodes whose KEY is A or B, sorted.
nodes_of() { while read -r r; do p=$(field "$r" "$1"); [ "$p" = "$2" ] || [ "$p" = "$3" ] && field "$r" node; done <<< "$rows" | sort | tr '\n' ' '; }
# blocked A B: node sets A and B are the two blocks, in either order.
blocked() { { [ "$1" = "n2 n4 " ] && [ "$2" = "n1 n3 " ]; } || { [ "$1" = "n1 n3 " ] && [ "$2" = "n2 n4 " ]; }; }
if [ "$rc" -eq 0 ] && [ "$(grep -c '^RK ' "$out")" = 4 ]; then
    said=$(grep -c "(Slurm's ranks)" "$out.err")
    kept=""
    while read -r r; do [ "$(field "$r" rank)" = "$(field "$r" procid)" ] || kept+="$(field "$r" node): RANK $(field "$r" rank), SLURM_PROCID $(field "$r" procid); "; done <<< "$rows"
    if at_least 25.11; then
        tap_check "${names[0]}: 25.11+, block by block" test "$(nodes_of procid 0 1)" = "n2 n4 " -a "$(nodes_of procid 2 3)" = "n1 n3 "
        [ -z "$kept" ] && [ "$said" = 4 ] && tap_ok "${names[1]}: kept" ||
            tap_not_ok "${names[1]}: kept" "$kept verbose said (Slurm's ranks) $said times, expected 4" "$(head -n 4 "$out.err")"
    else
        tap_check "${names[0]}: Slurm $running ignores BlockAsNodeRank, node-list order" \
            test "$(nodes_of procid 0 0)$(nodes_of procid 1 1)$(nodes_of procid 2 2)$(nodes_of procid 3 3)" = "n1 n2 n3 n4 "
        blocked "$(nodes_of rank 0 1)" "$(nodes_of rank 2 3)" && [ -n "$kept" ] && [ "$said" = 0 ] &&
            tap_ok "${names[1]}: island order (ranks 0,1 on $(nodes_of rank 0 1))" ||
            tap_not_ok "${names[1]}: island order" "ranks 0,1 on $(nodes_of rank 0 1), 2,3 on $(nodes_of rank 2 3); verbose said (Slurm's ranks) $said times" "$(head -n 4 "$out.err")"
    fi
    bad=""
    rank0=$(nodes_of rank 0 0)
    rank0=${rank0% }
    while read -r r; do
        g=$(field "$r" group) l=$(field "$r" local) n=$(field "$r" lws) k=$(field "$r" rank)
        [ -n "$g" ] && [ -n "$l" ] && [ -n "$n" ] && [ $((g * n + l)) = "$k" ] || bad+="$(field "$r" node): GROUP_RANK=$g LOCAL_WORLD_SIZE=$n LOCAL_RANK=$l RANK=$k; "
        [ "$(field "$r" master)" = "127.0.0.${rank0#n}" ] || bad+="$(field "$r" node): MASTER_ADDR=$(field "$r" master), RANK 0 runs on $rank0 (127.0.0.${rank0#n}); "
    done <<< "$rows"
    [ -z "$bad" ] && tap_ok "${names[2]}" || tap_not_ok "${names[2]}" "$bad"
else
    for n in "${names[@]}"; do tap_not_ok "$n" "srun rc=$rc, $(grep -c '^RK ' "$out") tasks: $(tail -n 3 "$out.err")"; done
fi
cluster_stop
exit 0
