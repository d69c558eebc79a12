#!/bin/bash
# EpilogSlurmctld for gputopo-launch: keeps a failing node out of the next
# attempt of a requeued job.
#
# gputopo-launch cannot change ExcNodeList of its own running job (Slurm 22.05
# accepts it only while the job is pending). So, before `scontrol requeue`, it
# records the node in the job's Comment: "gputopo:exclude=n2,n5[;backoff=S]".
# slurmctld runs this script when the requeued job ends its attempt (state
# COMPLETING, already pending again for updates); the script adds the recorded
# nodes to ExcNodeList and, with a back-off, sets StartTime=now+S.
#
# Install (slurm.conf):  EpilogSlurmctld=/etc/slurm/epilog_slurmctld_gputopo.sh
# A site with its own EpilogSlurmctld calls this script from it.
# Optional: GPUTOPO_EPILOG_LOG=FILE (also logs to syslog tag gputopo-epilog).
# Exits 0 always: it must never hold up slurmctld.

job=${SLURM_JOB_ID:-}
[ -n "$job" ] || exit 0
# slurmctld runs this with almost no environment: no PATH, no SLURM_CONF.
export PATH=${PATH:-/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin}
if [ -z "${SLURM_CONF:-}" ]; then
    # A slurmctld started with -f FILE (or SLURM_CONF=FILE): take the same file.
    pid=$PPID
    for _ in 1 2 3 4; do
        [ -r "/proc/$pid/cmdline" ] || break
        conf=$(tr '\0' '\n' < "/proc/$pid/cmdline" | sed -n '/^-f$/{n;p;q}')
        [ -z "$conf" ] && conf=$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | sed -n 's/^SLURM_CONF=//p' | head -n 1)
        if [ -n "$conf" ]; then export SLURM_CONF=$conf; break; fi
        pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)
        [ -n "$pid" ] && [ "$pid" -gt 1 ] || break
    done
fi
scontrol=${GPUTOPO_SCONTROL:-scontrol}

log() {
    logger -t gputopo-epilog -- "$*" 2>/dev/null
    [ -n "${GPUTOPO_EPILOG_LOG:-}" ] && echo "$(date -u +%FT%TZ) job $job: $*" >> "$GPUTOPO_EPILOG_LOG" 2>/dev/null
    return 0
}

record=$("$scontrol" show job -o "$job" 2>/dev/null) || exit 0
rec=$(printf '%s\n' "$record" | grep -o 'gputopo:exclude=[^ ]*' | head -n 1)
[ -n "$rec" ] || exit 0

nodes=${rec#gputopo:exclude=}
nodes=${nodes%%;*}
backoff=$(printf '%s\n' "$rec" | grep -o 'backoff=[0-9]*' | head -n 1)
backoff=${backoff#backoff=}
# Node names only: letters, digits, '-', '_', '.', ',', '[', ']'.
case "$nodes" in
    ''|*[!A-Za-z0-9_.,\[\]-]*) log "ignoring malformed exclusion record '$rec'"; exit 0 ;;
esac

old=$(printf '%s\n' "$record" | grep -o ' ExcNodeList=[^ ]*' | head -n 1)
old=${old# ExcNodeList=}
[ "$old" = "(null)" ] && old=""
want=$nodes
[ -n "$old" ] && want="$old,$nodes"

args=("JobId=$job" "ExcNodeList=$want")
[ -n "$backoff" ] && [ "$backoff" -gt 0 ] 2>/dev/null && args+=("StartTime=now+$backoff")
if out=$("$scontrol" update "${args[@]}" 2>&1); then
    log "excluded $nodes (ExcNodeList=$want)${backoff:+, start after ${backoff}s}"
else
    # Not requeued (a normal end): nothing to do.
    log "no update (${out//$'\n'/ })"
fi
exit 0
