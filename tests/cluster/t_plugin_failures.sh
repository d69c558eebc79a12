#!/usr/bin/env bash
# End-to-end failure behaviour of gputopo.so: bad options fail before launch,
# an unreadable topology or a broken plugstack line warns and runs unbound,
# `strict` fails the step with the message.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 17
cluster_ensure "${1:-build}" || { echo "not ok - plugin failures: cluster"; exit 1; }

out=$CLUSTER_DIR/tmp/fail.$$
marker=$CLUSTER_DIR/tmp/ran.$$
fails=0
result() {  # result NAME CONDITION-EXIT-CODE DETAILS
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fails=$((fails + 1)); fi
}
# The ids of every job slurmctld knows; "no job launched" = no id that was not there before
# (a count would hide a new job when an old one is purged meanwhile).
jobs_now() { squeue -h -t all -o %i 2>/dev/null | sort; }
new_jobs() { comm -13 <(printf '%s\n' "$1") <(printf '%s\n' "$2") | grep -c .; }

# Bad values: srun fails, prints the message, launches nothing (no job, no task).
for value in "fastest" "island,loud" "island,isolate,share" ""; do
    rm -f "$marker"
    before=$(jobs_now)
    with_timeout 60 srun -N1 -n1 "--gpu-topo=$value" touch "$marker" > "$out" 2>&1
    rc=$?
    after=$(jobs_now)
    want=$(case $value in
        fastest) echo "unknown mode 'fastest' in --gpu-topo=fastest (expected none, closest or island; flags: verbose, strict, isolate, share, membind, wholecores, noframework, help)" ;;
        island,loud) echo "unknown flag 'loud' in --gpu-topo=island,loud" ;;
        island,isolate,share) echo "flags 'isolate' and 'share' exclude each other" ;;
        *) echo "empty value in --gpu-topo=" ;;
    esac)
    [ "$rc" -ne 0 ] && grep -qF "gputopo: $want" "$out" && [ ! -e "$marker" ] && [ "$(new_jobs "$before" "$after")" = 0 ]
    result "srun --gpu-topo='$value' fails before launch with the message" $? "rc=$rc new jobs $(new_jobs "$before" "$after"): $(head -n 3 "$out")"
done

for cmd in sbatch salloc; do
    before=$(jobs_now)
    if [ "$cmd" = sbatch ]; then
        with_timeout 60 sbatch --gpu-topo=bogus --wrap "touch $marker" > "$out" 2>&1
    else
        with_timeout 60 salloc -N1 --gpu-topo=bogus touch "$marker" > "$out" 2>&1
    fi
    rc=$?
    after=$(jobs_now)
    [ "$rc" -ne 0 ] && grep -qF "gputopo: unknown mode 'bogus' in --gpu-topo=bogus" "$out" && [ "$(new_jobs "$before" "$after")" = 0 ]
    result "$cmd --gpu-topo=bogus fails before submission with the message" $? "rc=$rc: $(head -n 3 "$out")"
done

with_timeout 60 srun -N1 -n1 --gpu-topo=help true > "$out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "gputopo:   island" "$out" && grep -q "gputopo:   isolate" "$out"
result "--gpu-topo=help lists modes and flags and exits non-zero" $? "rc=$rc: $(head -n 3 "$out")"

# Unreadable topology: one warning, the job runs, nothing bound.
plugstack_set "topology=$CLUSTER_DIR/missing/%n.xml"
with_timeout 60 srun -w n3 -N1 -n2 --gpus-per-task=1 --gpu-topo=island "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '^PROBE' "$out")" = 2 ] && ! grep -q GPUTOPO_MODE "$out" &&
    [ "$(grep -c "gputopo: n3: topology file $CLUSTER_DIR/missing/n3.xml" "$out.err")" = 1 ] && grep -q "tasks run unbound" "$out.err"
result "unreadable topology: one warning naming the file, the job runs unbound" $? "rc=$rc: $(head -n 3 "$out.err")"

with_timeout 60 srun -w n3 -N1 -n2 --gpus-per-task=1 --gpu-topo=island,strict "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
[ "$rc" -ne 0 ] && ! grep -q '^PROBE' "$out" && grep -q "gputopo: n3: topology file $CLUSTER_DIR/missing/n3.xml.*(strict: the step fails)" "$out.err"
result "unreadable topology with strict: the step fails with the message" $? "rc=$rc: $(head -n 3 "$out.err")"

# A topology that is not a topology.
echo "not xml" > "$CLUSTER_DIR/tmp/garbage.xml"
plugstack_set "topology=$CLUSTER_DIR/tmp/garbage.xml"
with_timeout 60 srun -w n2 -N1 -n1 --gpus-per-task=1 --gpu-topo=closest "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
[ "$rc" -eq 0 ] && grep -q '^PROBE' "$out" && [ "$(grep -c "gputopo: .*garbage.xml" "$out.err")" = 1 ]
result "a file that is not XML: one warning naming it, the job runs" $? "rc=$rc: $(head -n 3 "$out.err")"

# A broken plugstack line: the plugin stays out of the way; srun still accepts the option.
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml" "colour=blue"
with_timeout 60 srun -w n3 -N1 -n1 --gpus-per-task=1 --gpu-topo=island "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
[ "$rc" -eq 0 ] && grep -q '^PROBE' "$out" && ! grep -q GPUTOPO_MODE "$out" &&
    grep -q "unknown argument 'colour'" "$CLUSTER_DIR"/log/slurmd-n3.log
result "unknown plugstack.conf argument: logged, the plugin stays out, jobs run" $? "rc=$rc: $(head -n 3 "$out.err")"
with_timeout 60 srun -w n3 -N1 -n1 --gpu-topo=island,strict true > "$out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "strict, but the plugin is not configured: plugstack.conf: unknown argument 'colour'" "$out"
result "unknown plugstack.conf argument with strict: srun fails early with the message" $? "rc=$rc: $(head -n 3 "$out")"

# strict where the topology's CPUs are not this host's (fixture node) fails; on n1 it binds.
plugstack_default
with_timeout 60 srun -w n2 -N1 -n1 --gpus-per-task=1 --gpu-topo=closest,strict true > "$out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "affinity not applied: the topology's CPUs (0-223) are not this host's (strict: the step fails)" "$out"
result "strict on a node whose topology CPUs are not this host's: the step fails, saying why" $? "rc=$rc: $(head -n 3 "$out")"
with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest,strict "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
# Counted per occurrence, not per line: srun forwards output in 1 KiB pieces, so two tasks' lines can share one.
[ "$rc" -eq 0 ] && [ "$(grep -o 'Cpus_allowed_list=' "$out" | wc -l)" = 2 ] && ! grep -q gputopo "$out.err"
result "strict on this host's CPUs: binds quietly" $? "rc=$rc: $(head -n 3 "$out.err") out: $(cut -c1-300 "$out")"
# Without strict, the fixture node says once that affinity was not applied, and goes on.
with_timeout 60 srun -w n2 -N1 -n4 --gpus-per-task=1 --gpu-topo=closest "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c ' GPUTOPO_CPUS=' "$out")" = 4 ] && [ "$(grep -c 'affinity not applied' "$out.err")" = 1 ]
result "CPUs not on this host: planned CPUs in GPUTOPO_CPUS, one note, tasks run" $? "rc=$rc: $(head -n 3 "$out.err")"

# default= in plugstack.conf applies when the user gives no option; none stays out.
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml" "default=closest"
with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c ' GPUTOPO_MODE=closest ' "$out")" = 2 ]
result "plugstack default=closest applies without --gpu-topo" $? "rc=$rc: $(head -c 300 "$out")"
with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=none "$here/probe.sh" > "$out" 2> "$out.err"
rc=$?
[ "$rc" -eq 0 ] && ! grep -q ' GPUTOPO_MODE=' "$out"
result "--gpu-topo=none overrides default=closest: nothing set" $? "rc=$rc: $(head -c 300 "$out")"
plugstack_default

rm -f "$out" "$out.err" "$marker"
[ "$fails" -eq 0 ]
