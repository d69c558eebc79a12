#!/bin/sh
# Slurm HealthCheckProgram wrapper around `gputopo doctor`.
#
# slurm.conf:
#   HealthCheckProgram=/usr/local/libexec/gputopo-healthcheck.sh
#   HealthCheckInterval=300
#   HealthCheckNodeState=IDLE,MIXED     # ANY runs it under busy nodes too
#
# Slurm ignores a health check's exit status: the program itself drains the
# node. This wrapper drains it when a doctor check fails (warnings do not
# drain) and resumes nothing: an admin clears the drain after a repair.
# GPUTOPO_EXPECT names the reference topology of this node type (e.g. written
# on a known-good node with `gputopo nccl-topo -o /etc/gputopo/expect/%type.xml`
# or the plugin's cache file); without it the node is checked against itself.
GPUTOPO=${GPUTOPO:-gputopo}
SCONTROL=${SCONTROL:-scontrol}
node=${SLURMD_NODENAME:-$(hostname -s)}
set --
[ -n "${GPUTOPO_EXPECT:-}" ] && set -- --expect "$GPUTOPO_EXPECT"

out=$("$GPUTOPO" doctor "$@" 2>&1)
rc=$?
if [ "$rc" -eq 1 ]; then
    # The summary line: "gputopo doctor: FAIL (nvlink, health); ..."; Slurm reasons are short.
    reason=$(printf '%s\n' "$out" | grep '^gputopo doctor: ' | tail -n 1 | cut -c1-120)
    "$SCONTROL" update NodeName="$node" State=DRAIN Reason="${reason:-gputopo doctor failed}"
    printf '%s\n' "$out" | logger -t gputopo-healthcheck 2>/dev/null || true
elif [ "$rc" -ne 0 ]; then
    # A bad command line or a missing gputopo: say so, do not drain the cluster for it.
    printf '%s\n' "$out" | logger -t gputopo-healthcheck 2>/dev/null || printf '%s\n' "$out" >&2
fi
exit 0
