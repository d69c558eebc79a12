#!/usr/bin/env bash
# etc/epilog_slurmctld_gputopo.sh: what it asks slurmctld to change, given
# the job's fields. Cases 1-7 give it canned squeue output and a recording
# scontrol (fast, no job needed); case 8 runs it against a real job of the
# local cluster whose name and comment try to pose as other fields.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 9
cluster_ensure "${1:-build}" || { echo "not ok - epilog: cluster"; exit 1; }
epilog=$CLUSTER_SRC/etc/epilog_slurmctld_gputopo.sh
w=$CLUSTER_DIR/tmp/epilog.$$
mkdir -p "$w"
cat > "$w/squeue" <<'EOS'
#!/bin/bash
printf '%s\n' "$FAKE_SQUEUE_OUT"
EOS
cat > "$w/scontrol" <<'EOS'
#!/bin/bash
printf '%s\n' "$*" >> "$FAKE_SCONTROL_LOG"
[ -n "${FAKE_SCONTROL_FAIL:-}" ] && { echo "$FAKE_SCONTROL_FAIL" >&2; exit 1; }
exit 0
EOS
chmod +x "$w/squeue" "$w/scontrol"

# run_epilog SQUEUE_OUTPUT [SCONTROL_FAILURE]: the scontrol calls, one a line, in $w/calls.
run_epilog() {
    : > "$w/calls"
    : > "$w/log"
    SLURM_JOB_ID=41 GPUTOPO_SQUEUE="$w/squeue" GPUTOPO_SCONTROL="$w/scontrol" GPUTOPO_EPILOG_LOG="$w/log" \
        FAKE_SQUEUE_OUT="$1" FAKE_SCONTROL_LOG="$w/calls" FAKE_SCONTROL_FAIL="${2:-}" \
        with_timeout 20 bash "$epilog"
}
expect_calls() {  # NAME EXPECTED-CALLS
    if [ "$(cat "$w/calls")" = "$2" ]; then tap_ok "$1"; else tap_not_ok "$1" "calls: $(cat "$w/calls")" "expected: $2" "log: $(cat "$w/log")"; fi
}

run_epilog "|my run gputopo:exclude=n2"
expect_calls "epilog: one recorded node -> ExcNodeList=n2" "update JobId=41 ExcNodeList=n2"

run_epilog "|gputopo:exclude=n2;backoff=60"
expect_calls "epilog: back-off -> StartTime=now+60" "update JobId=41 ExcNodeList=n2 StartTime=now+60"

run_epilog "n[5-6]|gputopo:exclude=n2"
expect_calls "epilog: merged with the job's existing ExcNodeList" "update JobId=41 ExcNodeList=n[5-6],n2"

run_epilog "|gputopo:exclude=n1 x gputopo:exclude=n3;backoff=5
gputopo:exclude=n4"
expect_calls "epilog: every exclusion record counts (three records, one over a newline)" \
    "update JobId=41 ExcNodeList=n1,n3,n4 StartTime=now+5"

run_epilog '|gputopo:exclude=n2$(touch_x);backoff=99999999999'
if [ ! -s "$w/calls" ] && grep -q "malformed exclusion record" "$w/log"; then
    tap_ok "epilog: a malformed record changes nothing and is logged"
else
    tap_not_ok "epilog: a malformed record changes nothing and is logged" "calls: $(cat "$w/calls")" "log: $(cat "$w/log")"
fi

run_epilog 'n1 Comment=x$(id)|gputopo:exclude=n2'
if [ ! -s "$w/calls" ] && grep -q "not a plain hostlist" "$w/log"; then
    tap_ok "epilog: an ExcNodeList that is not a plain hostlist is not passed on"
else
    tap_not_ok "epilog: an ExcNodeList that is not a plain hostlist is not passed on" "calls: $(cat "$w/calls")" "log: $(cat "$w/log")"
fi

run_epilog "|gputopo:exclude=n2" "Job is no longer pending execution for job 41"
rc=$?
if [ "$rc" = 0 ] && grep -q "no update (Job is no longer pending" "$w/log"; then
    tap_ok "epilog: a failed update is logged and the script still exits 0"
else
    tap_not_ok "epilog: a failed update is logged and the script still exits 0" "rc=$rc log: $(cat "$w/log")"
fi

# 8. A real job whose name and comment pose as other fields.
j=$(sbatch --parsable -N1 -t 2 -J 'x Comment=gputopo:exclude=n9 ExcNodeList=n9' \
    --comment='gputopo:exclude=n3 |ExcNodeList=evil
Restarts=99999999999 gputopo:exclude=n4' -o /dev/null --wrap 'sleep 30' 2>&1)
if wait_job_state "$j" RUNNING 30; then
    : > "$w/calls"
    SLURM_JOB_ID=$j GPUTOPO_SCONTROL="$w/scontrol" FAKE_SCONTROL_LOG="$w/calls" GPUTOPO_EPILOG_LOG="$w/log" \
        with_timeout 20 bash "$epilog"
    expect_calls "epilog: a real job's name and comment cannot pose as fields (squeue, comment last)" \
        "update JobId=$j ExcNodeList=n3,n4"
else
    tap_not_ok "epilog: a real job's name and comment cannot pose as fields" "job $j did not start"
fi
scancel "$j" 2>/dev/null

# 9. No squeue answer (the job is gone): nothing, exit 0.
: > "$w/calls"
SLURM_JOB_ID=999999 GPUTOPO_SCONTROL="$w/scontrol" FAKE_SCONTROL_LOG="$w/calls" with_timeout 20 bash "$epilog"
rc=$?
if [ "$rc" = 0 ] && [ ! -s "$w/calls" ]; then tap_ok "epilog: an unknown job changes nothing, exit 0"; else tap_not_ok "epilog: an unknown job changes nothing, exit 0" "rc=$rc"; fi
exit 0
