#!/bin/sh
# Slurm HealthCheckProgram wrapper around `gputopo doctor`.
#
# slurm.conf:
#   HealthCheckProgram=/usr/local/libexec/gputopo-healthcheck.sh
#   HealthCheckInterval=300
#   HealthCheckNodeState=IDLE,MIXED     # ANY runs it under busy nodes too
#
# Slurm ignores a health check's exit status: the program itself drains the
# node. This wrapper drains it when a doctor check fails (exit 1; warnings do
# not drain) and resumes nothing: an admin clears the drain after a repair.
# Exit 2 (a bad command line, or a GPUTOPO_EXPECT that cannot be read) or a
# missing gputopo never drains: it is logged at err priority (syslog, tag
# gputopo-healthcheck) and on standard error, each run.
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
    # 2: a bad command line or a reference (GPUTOPO_EXPECT) that cannot be read; anything else: gputopo
    # missing or broken. The site's mistake, not the node's: never drain for it, but say so loudly
    # (syslog at err priority and standard error), on every run, until it is fixed.
    msg="gputopo-healthcheck: NOT CHECKED, node $node not drained: '$GPUTOPO doctor${*:+ $*}' exited $rc"
    [ "$rc" -eq 2 ] && msg="$msg (a bad command line or an unreadable reference: GPUTOPO_EXPECT=${GPUTOPO_EXPECT:-unset})"
    [ "$rc" -eq 127 ] && msg="$msg (gputopo not found: set GPUTOPO or PATH)"
    printf '%s\n%s\n' "$msg" "$out" | logger -p daemon.err -t gputopo-healthcheck 2>/dev/null
    printf '%s\n%s\n' "$msg" "$out" >&2
fi
exit 0
