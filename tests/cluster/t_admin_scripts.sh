#!/usr/bin/env bash
# The admin scripts of etc/ on the local cluster:
#  - job_submit.lua (installed beside slurm.conf by the harness): a job
#    without -N, with no topology.conf beside the script, and a topology.conf
#    whose leaf names carry two bracket ranges (r[1-1]n[1-3] is 3 nodes);
#  - etc/gputopo-healthcheck.sh: drains the node (scontrol update, recorded
#    by a stand-in) only when `gputopo doctor` fails (exit 1), with the
#    doctor's summary as the reason; warnings and usage errors drain nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 7
cluster_ensure "${1:-build}" || { echo "not ok - admin scripts: cluster"; exit 1; }
w=$CLUSTER_DIR/tmp/admin.$$
mkdir -p "$w"
etc=$CLUSTER_DIR/etc
plugstack_default  # sbatch needs the plugin for --gpu-topo

switches_of() {
    local job
    job=$(with_timeout 30 sbatch --parsable --hold -o /dev/null "$@" --wrap true 2>"$w/err") || { echo "sbatch failed: $(cat "$w/err")"; return; }
    scontrol show job "$job" | grep -o 'Switches=[^ ]*'
    scancel "$job" 2>/dev/null
}
expect_switches() {  # NAME WANT-GLOB SBATCH-ARGS...
    local name=$1 want=$2 got
    shift 2
    got=$(switches_of "$@")
    # shellcheck disable=SC2254
    case "$got" in $want) tap_ok "$name" ;; *) tap_not_ok "$name" "got '$got', expected $want" ;; esac
}

expect_switches "job_submit.lua: --gpu-topo=island without -N asks for one switch" 'Switches=1@00:01:00' \
    -n 4 --gpu-topo=island

cp "$etc/topology.conf" "$w/topology.conf.saved"
# slurmctld read topology.conf at start; job_submit.lua reads it per submission.
rm -f "$etc/topology.conf"
expect_switches "job_submit.lua: no topology.conf beside it -> one switch for -N3" 'Switches=1@00:01:00' \
    -N3 --gpu-topo=island
printf 'SwitchName=s1 Nodes=r[1-1]n[1-3]\nSwitchName=s2 Nodes=x1\nSwitchName=top Switches=s[1-2]\n' > "$etc/topology.conf"
expect_switches "job_submit.lua: leaves with two bracket ranges (r[1-1]n[1-3] = 3 nodes) -> 2 switches for -N4" \
    'Switches=2@00:01:00' -N4 --gpu-topo=island
cp "$w/topology.conf.saved" "$etc/topology.conf"

# Health check with a stand-in gputopo and scontrol.
cat > "$w/gputopo" <<'EOS'
#!/bin/sh
echo "args: $*" >> "$FAKE_LOG"
printf '%s\n' "$FAKE_OUT"
exit "$FAKE_RC"
EOS
cat > "$w/scontrol" <<'EOS'
#!/bin/sh
printf 'scontrol %s\n' "$*" >> "$FAKE_LOG"
EOS
chmod +x "$w/gputopo" "$w/scontrol"
hc() {  # RC OUTPUT [EXPECT]
    : > "$w/calls"
    SLURMD_NODENAME=n2 GPUTOPO="$w/gputopo" SCONTROL="$w/scontrol" FAKE_LOG="$w/calls" FAKE_RC=$1 FAKE_OUT=$2 \
        GPUTOPO_EXPECT=${3:-} with_timeout 20 sh "$CLUSTER_SRC/etc/gputopo-healthcheck.sh"
}
hc 1 "gputopo doctor: FAIL (nvlink, health); 2 warnings" /etc/gputopo/expect/h100.xml
rc=$?
if [ "$rc" = 0 ] && grep -qx 'args: doctor --expect /etc/gputopo/expect/h100.xml' "$w/calls" &&
   grep -qx 'scontrol update NodeName=n2 State=DRAIN Reason=gputopo doctor: FAIL (nvlink, health); 2 warnings' "$w/calls"; then
    tap_ok "healthcheck: doctor FAIL -> node drained with the doctor's summary as the reason, exit 0"
else
    tap_not_ok "healthcheck: doctor FAIL -> node drained with the summary" "rc=$rc $(cat "$w/calls")"
fi
hc 0 "gputopo doctor: OK; 1 warning"
if ! grep -q '^scontrol' "$w/calls" && grep -qx 'args: doctor' "$w/calls"; then
    tap_ok "healthcheck: doctor OK (with warnings) -> nothing drained; no --expect without GPUTOPO_EXPECT"
else
    tap_not_ok "healthcheck: doctor OK -> nothing drained" "$(cat "$w/calls")"
fi
hc 2 "gputopo doctor: unknown option"
if ! grep -q '^scontrol' "$w/calls"; then
    tap_ok "healthcheck: a usage error (exit 2) drains nothing"
else
    tap_not_ok "healthcheck: a usage error drains nothing" "$(cat "$w/calls")"
fi
# No gputopo at all (not installed on this node): a usage problem, not a drain.
: > "$w/calls"
SLURMD_NODENAME=n2 GPUTOPO="$w/no-such-gputopo" SCONTROL="$w/scontrol" FAKE_LOG="$w/calls" \
    with_timeout 60 sh "$CLUSTER_SRC/etc/gputopo-healthcheck.sh" 2>/dev/null
rc=$?
if [ "$rc" = 0 ] && ! grep -q '^scontrol' "$w/calls"; then
    tap_ok "healthcheck: gputopo missing on the node drains nothing, exit 0"
else
    tap_not_ok "healthcheck: gputopo missing drains nothing" "rc=$rc $(cat "$w/calls")"
fi
exit 0
