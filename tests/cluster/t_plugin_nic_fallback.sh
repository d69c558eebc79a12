#!/usr/bin/env bash
# NIC fallback on the XE8640 node (n3): its hwloc XML records mlx5_1, mlx5_2
# and mlx5_3 with Port1State=1 (DOWN) and only mlx5_0 ACTIVE (4). With
# `verbose`, the plugin says once per node which GPUs lost their nearest NIC
# and what they use instead, in the same words as `gputopo show`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 3
build=${1:-build}
cluster_ensure "$build" || { echo "not ok - plugin NIC fallback: cluster"; exit 1; }
plugstack_default

out=$CLUSTER_DIR/tmp/fallback.$$
result() {  # result NAME EXIT-CODE DETAILS
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fi
}
topo=$(node_topology n3)

# What the CLI says for the same file.
want=$(cd "$here/../.." && "$build/gputopo" show --topology "$topo" 2>&1 >/dev/null | sed -n 's/^gputopo: warning: \(GPU [0-9]*: nearest NIC .*\)$/\1/p')
with_timeout 60 srun -w n3 -N1 -n4 --gpus-per-task=1 --gpu-topo=closest,verbose true > "$out" 2>&1
rc=$?
got=$(sed -n 's/^gputopo: n3: \(GPU [0-9]*: nearest NIC .*\)$/\1/p' "$out")
[ "$rc" -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]
result "verbose names the GPUs whose nearest NIC is down, as gputopo show does" $? "rc=$rc want=[$want] got=[$got] $(head -n 12 "$out")"

# The XML says mlx5_2 is down: it must be among the lost NICs, mlx5_0 (the only active one) the fallback.
state=$(grep -A3 'name="mlx5_2" osdev_type="3"' "$topo" | sed -n 's/.*Port1State" value="\([0-9]*\)".*/\1/p')
[ "$rc" -eq 0 ] && [ -n "$state" ] && [ "$state" != 4 ] && echo "$got" | grep -q 'nearest NIC mlx5_2 .*is down; falling back to mlx5_0'
result "the fallback follows the port states in the node's XML (mlx5_2 state $state)" $? "$got"

with_timeout 60 srun -w n3 -N1 -n4 --gpus-per-task=1 --gpu-topo=closest true > "$out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ! grep -q 'nearest NIC' "$out"
result "without verbose the fallback is not printed (and the step ran)" $? "rc=$rc $(head -n 5 "$out")"
rm -f "$out"
