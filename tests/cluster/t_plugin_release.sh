#!/usr/bin/env bash
# The plugin is built for the Slurm release that runs it: srun, sbatch and salloc load it
# (--gpu-topo=help names the plugin's version and the release it was built for, equal to
# the running Slurm's major.minor) and a 2-node step binds on both nodes. The short check
# tests/release/run.sh runs on every release (tests/release/README).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || { echo "not ok - plugin release: cluster"; exit 1; }
tap_plan 5
fails=0
result() {
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fails=$((fails + 1)); fi
}

running=$(srun --version | awk '{print $2}')              # "24.11.5"
version=$(sed -n 's/.*kVersion = "\(.*\)".*/\1/p' "$CLUSTER_SRC/topo/core/version.hpp")
for cmd in "srun true" "sbatch --wrap=true" "salloc true"; do
    # shellcheck disable=SC2086
    out=$(timeout 60 ${cmd% *} --gpu-topo=help ${cmd#* } 2>&1)
    built=$(echo "$out" | sed -n "s/^gputopo $version, built for Slurm \([0-9.]*\)$/\1/p")
    [ -n "$built" ] && [ "${built%.*}" = "${running%.*}" ] && echo "$out" | grep -q 'closest'
    result "${cmd% *} --gpu-topo=help: gputopo $version built for Slurm ${running%.*} (running $running)" $? "$out"
done

out=$(timeout 120 srun -w n2,n3 -N2 -n4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=closest,verbose \
    bash -c 'echo "T $SLURMD_NODENAME $GPUTOPO_GPUS"' 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c '^T n2 [0-9]')" = 2 ] && [ "$(echo "$out" | grep -c '^T n3 [0-9]')" = 2 ] &&
    [ "$(echo "$out" | grep -c '^gputopo: n[23] task')" = 4 ]
result "srun --gpu-topo=closest on 2 nodes with different topologies (n2 8xH100, n3 XE8640) on Slurm $running" $? "rc=$rc $out"
# wrap=: tasks start under gputopo-launch (spank_prepend_task_argv, 23.11+); refused before.
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml wrap=$CLUSTER_BUILD/gputopo-launch"
out=$(timeout 120 srun -w n2 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest \
    bash -c 'echo "T $SLURM_PROCID ${LOCAL_RANK:-unset} $(tr "\0" " " < /proc/$PPID/cmdline)"' 2>&1)
rc=$?
if [ "$(printf '%s\n%s\n' "$running" 23.11 | sort -V | head -n 1)" = 23.11 ]; then
    [ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c "^T [01] [01] $CLUSTER_BUILD/gputopo-launch -- bash")" = 2 ]
    result "wrap=gputopo-launch: every task of a --gpu-topo step runs under the launcher (Slurm $running)" $? "rc=$rc $out"
else
    echo "$out" | grep -q "wrap= needs Slurm 23.11 or later"
    result "wrap= is refused with one message on Slurm $running (before 23.11)" $? "rc=$rc $out"
fi
plugstack_default
[ "$fails" -eq 0 ]
