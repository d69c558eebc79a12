#!/usr/bin/env bash
# srun launch time with gputopo.so against without it, on the same local
# cluster (tests/cluster/harness.sh), interleaved in one run:
#   srun -N4 -n32 -O --gpus-per-node=2 [--gpu-topo=closest] true
# "without": plugstack.conf empty; "loaded": the plugin in plugstack.conf, no --gpu-topo (what
# every job pays); "with": --gpu-topo=closest, the plugin with cache=DIR reading each node's
# topology through its warm snapshot and binding every task. Prints the medians, both ratios and the
# per-task time spent in the plugin (its own clock, GPUTOPO_DEBUG_TIMING=1 in 5 further runs:
# task_init + (init_post_opt's snapshot read + user_init's plan) shared over the node's tasks).
#
# Every launch starts alike: its plugstack.conf written, then no job left on the cluster (the
# previous job's teardown would otherwise be charged to whichever variant comes next), and the
# three variants run in a new random order in each repetition. Run back to back in a fixed
# order, the variant that followed another job directly measured 2-4 % slower on this 2-core box.
#   bench/bench_srun.sh [BUILD] [REPS]      (default: build 40)
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
reps=${2:-${GPUTOPO_BENCH_REPS:-40}}
. "$src/tests/cluster/harness.sh"
cluster_start "$build" || exit 1
tmp=$CLUSTER_DIR/tmp

one() {  # one LABEL SRUN-ARGS... ; appends the wall time in ms to $tmp/LABEL
    local label=$1 t0 t1
    shift
    t0=$(date +%s%N)
    srun -N4 -n32 -O --gpus-per-node=2 "$@" true > /dev/null 2>> "$tmp/$label.err" || echo "bench: srun failed ($label)" >&2
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000000 )) >> "$tmp/$label"
}

configure() {  # configure VARIANT: plugstack.conf for it
    if [ "$1" = without ]; then plugstack_set_line ""; else plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml cache=$CLUSTER_DIR/cache"; fi
}
idle() {  # until no job is left running or completing (at most 10 s)
    local i
    for i in $(seq 1 100); do
        [ -z "$(squeue -h -t R,CG,CF -o %i 2>/dev/null)" ] && return 0
        sleep 0.1
    done
}
run_variant() {
    configure "$1"
    idle
    case $1 in
        without | loaded) one "$1" ;;
        with) one with --gpu-topo=closest ;;
    esac
}

# Warm up every path (page cache, slurmd connections, the topology cache).
for v in without with loaded; do
    configure "$v"
    case $v in with) one warm --gpu-topo=closest ;; *) one warm ;; esac
done
for i in $(seq 1 "$reps"); do
    for v in $(printf '%s\n' without loaded with | shuf); do run_variant "$v"; done
done
# The plugin's own clock in separate runs: its timing lines (one per task on
# stderr, through srun) would otherwise be part of what is measured above.
configure with
for i in $(seq 1 5); do idle; GPUTOPO_DEBUG_TIMING=1 one timed --gpu-topo=closest; done

python3 - "$tmp" "$reps" <<'PYEOF'
import re, statistics, sys
d, reps = sys.argv[1], int(sys.argv[2])
w = [int(x) for x in open(d + "/with")]
wo = [int(x) for x in open(d + "/without")]
lo = [int(x) for x in open(d + "/loaded")]
per_task = [float(m.group(1)) for m in re.finditer(r"plugin time ([0-9.]+) us", open(d + "/timed.err").read())]
print("srun -N4 -n32 launch, %d repetitions each, shuffled, each on an idle cluster (4 slurmd on one host)" % reps)
print("  without gputopo.so:                    median %6.1f ms  mean %6.1f ms" % (statistics.median(wo), statistics.mean(wo)))
print("  gputopo.so loaded, no --gpu-topo:       median %6.1f ms  mean %6.1f ms" % (statistics.median(lo), statistics.mean(lo)))
print("  --gpu-topo=closest, warm cache=:        median %6.1f ms  mean %6.1f ms" % (statistics.median(w), statistics.mean(w)))
for name, v in (("loaded/without", lo), ("closest/without", w)):
    print("  ratio %-16s median %.3f  mean %.3f   (target <= 1.02)" %
          (name + ":", statistics.median(v) / statistics.median(wo), statistics.mean(v) / statistics.mean(wo)))
if per_task:
    print("  plugin time per task: median %.1f us  max %.1f us over %d tasks   (target < 1000 us)" %
          (statistics.median(per_task), max(per_task), len(per_task)))
else:
    print("  plugin time per task: no timing lines found")
PYEOF
cluster_stop
