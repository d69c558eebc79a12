#!/usr/bin/env bash
# In-job restart (gputopo run --spares) against requeue, side by side in one run, on the
# loopback cluster (tests/cluster/harness.sh), then the goodput simulation at 100,000 GPUs
# (bench_goodput) fed with the two measured restart times.
#  in-job:  a job with 2 spares; kill -9 of one rank, REPS times (spares come back: the
#           killed node's slot goes to a spare, the next fault takes the other spare ...);
#           fault -> every rank of the new step running (the program's own start lines).
#  requeue: a job with no spare; kill -9 of one rank -> gputopo run requeues the job with
#           the node excluded (Slurm's own hold, EligibleTime ~120 s, is part of it, as on a
#           production cluster) -> every rank of the next attempt running.
#   bench/bench_job_restart.sh [BUILD] [REPS]     (default: build 2)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
reps=${2:-2}
. "$src/tests/cluster/harness.sh"
cluster_start "$build" || exit 1
G=$CLUSTER_BUILD/gputopo
P=$src/tests/cluster/job_rank.sh
w=$CLUSTER_DIR/tmp/bench-restart
mkdir -p "$w/in" "$w/rq"
now() { date +%s.%N; }
latest() { sort -n "$1" 2>/dev/null | tail -n 1 | cut -d' ' -f1; }
sub() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$1" "$2"; }

printf '#!/bin/bash\nexec %s run --spares %d --max-restarts 10 --state-dir %s/state -- %s %s\n' "$G" "$reps" "$w/in" "$P" "$w/in" > "$w/in/job.sh"
ji=$(with_timeout 30 sbatch --parsable -N $((2 + reps)) --no-kill -t 10 -o "$w/in/job.out" "$w/in/job.sh")
inj=()
for a in $(seq 0 $((reps - 1))); do
    wait_lines "$w/in/beat.$a" 2 60 || { echo "bench_job_restart: in-job attempt $a did not start"; tail "$w/in/job.out"; exit 1; }
    t0=$(now)
    kill -KILL "$(cat "$w/in/pid.$a.0")"
    wait_lines "$w/in/start.$((a + 1))" 2 60 || { echo "bench_job_restart: in-job restart $a failed"; tail "$w/in/job.out"; exit 1; }
    inj+=("$(sub "$(latest "$w/in/start.$((a + 1))")" "$t0")")
done
touch "$w/in/finish"

printf '#!/bin/bash\n%s run --spares 0 --max-restarts 10 --state-dir %s/state -- %s %s\n' "$G" "$w/rq" "$P" "$w/rq" > "$w/rq/job.sh"
jr=$(with_timeout 30 sbatch --parsable -N 2 --no-kill -t 10 -o "$w/rq/job.out" "$w/rq/job.sh")
wait_lines "$w/rq/beat.0" 2 60 || { echo "bench_job_restart: requeue job did not start"; exit 1; }
t0=$(now)
kill -KILL "$(cat "$w/rq/pid.0.0")"
wait_lines "$w/rq/start.1" 2 300 || { echo "bench_job_restart: the requeued job did not run again"; tail "$w/rq/job.out"; exit 1; }
rq=$(sub "$(latest "$w/rq/start.1")" "$t0")
touch "$w/rq/finish"

med=$(printf '%s\n' "${inj[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
echo "== in-job restart vs requeue (loopback cluster, kill -9 of one rank, fault -> every rank of the new step running)"
printf '   %-34s %s\n' "in-job restart (gputopo run --spares $reps)" "$(printf '%s s ' "${inj[@]}")(median $med s)"
printf '   %-34s %s\n' "requeue (no spare left)" "$rq s (Slurm's hold included; excluded: $(job_field "$jr" ExcNodeList))"
scancel "$ji" "$jr" 2>/dev/null
"$CLUSTER_BUILD/bench/bench_goodput" "$med" "$rq"
