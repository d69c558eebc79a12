#!/usr/bin/env bash
# End-to-end: --gpu-topo given to sbatch and salloc applies to the steps inside
# (unless a step says otherwise); job_submit.lua turns island into a
# one-switch constraint (Switches=1@...).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 8
cluster_ensure "${1:-build}" || { echo "not ok - plugin batch: cluster"; exit 1; }

out=$CLUSTER_DIR/tmp/batch.$$
fails=0
result() {
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fails=$((fails + 1)); fi
}
check() {  # check NAME FILE CHECKER-ARGS...
    python3 "$here/check_binding.py" "$1" "$2" --gputopo "$CLUSTER_BUILD/gputopo" --topo-dir "$CLUSTER_DIR/topo" \
        --real n1 --amd n4 "${@:3}" || fails=$((fails + 1))
}
run_batch() {  # run_batch OUTFILE SBATCH-ARGS... ; prints the job id
    local f=$1 job
    shift
    job=$(with_timeout 30 sbatch --parsable -o "$f" "$@") || return 1
    wait_job_state "$job" COMPLETED 90 || { cat "$f" >&2; return 1; }
    echo "$job"
}

# sbatch --gpu-topo=island,verbose: the step inside is bound; the job asks for one switch.
job=$(run_batch "$out.1" -w n3 -N1 -n4 --gpus-per-task=1 --gpu-topo=island,verbose \
      --wrap "srun $here/probe.sh")
if [ -n "$job" ]; then
    check "sbatch --gpu-topo=island,verbose: srun inside binds every task" "$out.1" --mode island --expect-tasks 4
    [ "$(grep -c '^gputopo: n3 task [0-3]: gpus=' "$out.1")" = 4 ]
    result "sbatch --gpu-topo=...,verbose: the steps inside print the binding lines" $? "$(head -n 5 "$out.1")"
    scontrol show job "$job" | grep -q "Switches=1@00:01:00"
    result "job_submit.lua: sbatch --gpu-topo=island carries Switches=1@00:01:00" $? "$(scontrol show job "$job" | grep -i switch)"
else
    tap_not_ok "sbatch --gpu-topo=island,verbose job" "did not complete"; fails=$((fails + 1))
fi

# A step's own --gpu-topo wins over the job's.
job=$(run_batch "$out.2" -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=island \
      --wrap "srun --gpu-topo=closest,isolate $here/probe.sh")
if [ -n "$job" ]; then
    check "sbatch --gpu-topo=island, srun --gpu-topo=closest,isolate inside: the step's option wins" "$out.2" \
        --mode closest --isolate --expect-tasks 2
else
    tap_not_ok "sbatch with a step option" "did not complete"; fails=$((fails + 1))
fi

# closest asks for no switch constraint.
job=$(run_batch "$out.3" -w n2 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest --wrap "srun $here/probe.sh")
if [ -n "$job" ]; then
    check "sbatch --gpu-topo=closest on the HGX node" "$out.3" --mode closest --expect-tasks 2
    ! scontrol show job "$job" | grep -q "Switches=1@"
    result "job_submit.lua: --gpu-topo=closest adds no switch constraint" $? "$(scontrol show job "$job" | grep -i switch)"
else
    tap_not_ok "sbatch --gpu-topo=closest" "did not complete"; fails=$((fails + 1))
fi

# A user's own --switches is kept.
job=$(run_batch "$out.4" -w n3 -N1 -n1 --switches=1@5:00 --gpu-topo=island --wrap "true")
if [ -n "$job" ]; then
    scontrol show job "$job" | grep -q "Switches=1@00:05:00"
    result "job_submit.lua: a user's --switches=1@5:00 is left as it is" $? "$(scontrol show job "$job" | grep -i switch)"
fi

# salloc --gpu-topo: the srun inside the allocation is bound.
timeout 120 salloc -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=island srun "$here/probe.sh" > "$out.5" 2> "$out.5.err"
rc=$?
if [ "$rc" -eq 0 ]; then
    check "salloc --gpu-topo=island: srun inside binds every task (real CPUs on n1)" "$out.5" --mode island --expect-tasks 2
else
    tap_not_ok "salloc --gpu-topo=island" "rc=$rc $(head -n 3 "$out.5.err")"; fails=$((fails + 1))
fi

rm -f "$out".*
[ "$fails" -eq 0 ]
