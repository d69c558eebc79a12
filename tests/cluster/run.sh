#!/usr/bin/env bash
# Starts one local Slurm cluster (tests/cluster/harness.sh), runs every
# tests/cluster/t_*.sh in sorted order against it, stops it.
#   tests/cluster/run.sh [BUILD]        (default: build)
#   GPUTOPO_CLUSTER_TESTS="t_plugin_env.sh ..."  run only these
#   GPUTOPO_CLUSTER_CONFIGLESS=1       configless cluster (harness.sh: slurmd --conf-server)
#   GPUTOPO_CLUSTER_CGROUP=auto|1|0    task/affinity,task/cgroup + proctrack/cgroup + cgroup.conf
#                                      Constrain* where the kernel allows (auto, the default), or
#                                      required (1), or task/none + proctrack/linuxproc (0)
# Each test prints "# plan N" first, then "ok - NAME" / "not ok - NAME" lines.
# A script that prints fewer results than its plan (it died, skipped a case, or
# did not start) gets one "not ok" line per missing case; one without a plan
# line, or that exits non-zero without a "not ok", gets one "not ok" line.
# Missing Slurm or munge binaries are a failure, not a skip (`make test-deps`
# installs them). Per-script seconds are printed as "# T: exit RC, Ns".
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
. "$here/harness.sh"

if ! _harness_need; then
    echo "not ok - cluster harness: Slurm/munge programs are missing"
    exit 1
fi
if ! cluster_start "$build"; then
    echo "not ok - cluster harness: the local cluster did not start"
    exit 1
fi
echo "# cluster in $CLUSTER_DIR (slurmctld port $CLUSTER_CTLD_PORT$([ "$CLUSTER_CONFIGLESS" = 1 ] && echo ', configless'))"
echo "# Slurm configuration: $(cluster_config_line)"

status=0
tests=${GPUTOPO_CLUSTER_TESTS:-$(cd "$here" && ls t_*.sh 2>/dev/null | sort)}
for t in $tests; do
    echo "# $t"
    plugstack_default
    start=$(date +%s)
    log=$CLUSTER_DIR/results.$t.log
    if [ -f "$here/$t" ]; then
        bash "$here/$t" "$build" | tee "$log"
        rc=${PIPESTATUS[0]}
    else
        : > "$log"
        rc=127
    fi
    tap_count_results "$t" "$log" "$rc" || status=1
    echo "# $t: exit $rc, $(( $(date +%s) - start ))s"
    # Leave no job behind for the next test.
    scancel --quiet -u root 2>/dev/null || true
done
cluster_stop
exit $status
