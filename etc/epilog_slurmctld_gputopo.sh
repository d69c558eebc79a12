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
# The job's fields come from squeue, the excluded nodes (a hostlist Slurm
# checked) first and the Comment (the user's free text) last, so nothing the
# user writes (job name, comment) can pose as ExcNodeList. Every exclusion
# record in the Comment counts; node names and the existing ExcNodeList must
# be plain hostlists (letters, digits, - _ . , [ ]), else nothing is changed.
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
squeue=${GPUTOPO_SQUEUE:-squeue}
hostlist_ok() {
    case "$1" in *[!A-Za-z0-9_.,\[\]-]*) return 1 ;; esac
    return 0
}

log() {
    logger -t gputopo-epilog -- "$*" 2>/dev/null
    [ -n "${GPUTOPO_EPILOG_LOG:-}" ] && echo "$(date -u +%FT%TZ) job $job: $*" >> "$GPUTOPO_EPILOG_LOG" 2>/dev/null
    return 0
}

record=$("$squeue" --noheader --jobs="$job" --format='%x|%k' 2>/dev/null) || exit 0
case "$record" in *'|'*) ;; *) exit 0 ;; esac
old=${record%%|*}
comment=${record#*|}
[ "$old" = "(null)" ] && old=""

nodes=""
backoff=""
while IFS= read -r rec; do
    [ -n "$rec" ] || continue
    part=${rec#gputopo:exclude=}
    n=${part%%;*}
    if [ -z "$n" ] || ! hostlist_ok "$n"; then
        log "ignoring malformed exclusion record '$rec'"
        continue
    fi
    nodes=${nodes:+$nodes,}$n
    # backoff=S with S whole seconds (launcher/state/job_comment.hpp reads it alike).
    b=$(printf '%s\n' "$part" | tr ';' '\n' | sed -n 's/^backoff=\([0-9][0-9]*\)$/\1/p' | tail -n 1)
    # At most 9 digits (no arithmetic overflow); later records win.
    [ -n "$b" ] && [ "${#b}" -le 9 ] && backoff=$b
done <<EOR
$(printf '%s\n' "$comment" | grep -o 'gputopo:exclude=[^[:space:]]*')
EOR
[ -n "$nodes" ] || exit 0
if ! hostlist_ok "$old"; then
    log "not updating: the job's ExcNodeList '$old' is not a plain hostlist"
    exit 0
fi

want=$nodes
[ -n "$old" ] && want="$old,$nodes"
args=("JobId=$job" "ExcNodeList=$want")
[ -n "$backoff" ] && [ "$backoff" -gt 0 ] && args+=("StartTime=now+$backoff")
if out=$("$scontrol" update "${args[@]}" 2>&1); then
    log "excluded $nodes (ExcNodeList=$want)${backoff:+, start after ${backoff}s}"
else
    # Not requeued (a normal end), or slurmctld refused: say so, change nothing.
    log "no update (${out//$'\n'/ })"
fi
exit 0
