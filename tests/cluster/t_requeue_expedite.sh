#!/usr/bin/env bash
# gputopo-launch in jobs submitted with sbatch --requeue=expedite (Slurm 25.11+, allowed with
# SlurmctldParameters=enable_expedited_requeue; a cluster of this script's own has it).
# Slurm requeues such a job itself on a node failure and on ANY nonzero batch exit, and when
# no node's epilog failed it holds it (REQUEUE_HOLD, slurmctld: "holding expedited requeue").
#  0. control: the same exit 78 from a batch script without the launcher: Slurm holds the job
#     (what the launcher prevents);
#  1. do-not-retry: the program exits 78 (gputopo's reserved user-error code): the launcher
#     sets the job's Requeue=0 before it ends, so the job ends FAILED with exit code 78,
#     never requeued, never REQUEUE_HOLD;
#  2. a node of the job is set DOWN while it runs: Slurm requeues it at once; the launcher on
#     the surviving node (told to requeue preemptions too, --requeue-on preemption) adds no
#     second requeue: one restart, and the next attempt completes;
#  3. a retryable failure (an Xid line): gputopo requeues it, once; Slurm's own exit-code
#     requeue adds none and holds nothing; the next attempt completes.
# Before 25.11 sbatch has no --requeue=expedite: the cases are skipped ("# SKIP").
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 4
names=(
    "expedite: control: a batch script that exits 78 without gputopo-launch is held by Slurm (REQUEUE_HOLD)"
    "expedite: a do-not-retry end (exit 78) ends the job FAILED 78:0, Requeue=0, never REQUEUE_HOLD"
    "expedite: a node set DOWN: Slurm requeues the job once, the launcher adds no second requeue"
    "expedite: a retryable failure (Xid): one requeue by gputopo, none by Slurm, the next attempt completes"
)
build=${1:-build}
cluster_ensure "$build" || { echo "not ok - expedite: cluster"; exit 1; }
build=$CLUSTER_BUILD
running=$(sbatch --version | awk '{print $2}')
at_least() { [ "$(printf '%s\n%s\n' "$running" "$1" | sort -V | head -n 1)" = "$1" ]; }
if ! at_least 25.11; then
    for n in "${names[@]}"; do tap_ok "$n # SKIP Slurm $running has no --requeue=expedite (25.11+)"; done
    exit 0
fi

(
    unset CLUSTER_DIR
    export GPUTOPO_CLUSTER_CONFIGLESS=0 GPUTOPO_EXTRA_SLURM_CONF="SlurmctldParameters=enable_expedited_requeue"
    start=$(mktemp /tmp/gputopo-expedite-start.XXXXXX)
    if ! cluster_start "$build" > "$start" 2>&1; then
        for n in "${names[@]}"; do tap_not_ok "$n" "the cluster did not start: $(tail -n 20 "$start")"; done
        rm -f "$start"
        exit 1
    fi
    rm -f "$start"
    L=$CLUSTER_BUILD/gputopo-launch
    w=$CLUSTER_DIR/tmp/expedite
    mkdir -p "$w"
    for n in $CLUSTER_NODES; do mkdir -p "$w/node/$n"; done
    per_node="--node-state-dir $w/node/%n"
    state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
    field() { scontrol show job "$1" 2>/dev/null | grep -o " $2=[^ ]*" | head -n 1 | cut -d= -f2-; }
    # done_or_held JOB SECONDS: until the job is finished or held; its state in $st.
    done_or_held() {
        local i
        for i in $(seq 1 $(($2 * 5))); do
            st=$(state "$1")
            case "$st" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|REQUEUE_HOLD) return 0 ;; esac
            [ "$(field "$1" Reason)" = JobHeldUser ] && { st="$st(JobHeldUser)"; return 0; }
            sleep 0.2
        done
        return 1
    }
    why() { echo "job $1: $(scontrol show job "$1" 2>&1 | grep -o '\(JobState\|Reason\|Requeue\|Restarts\|ExitCode\|NodeList\|ExpeditedRequeue\)=[^ ]*' | tr '\n' ' ')"; grep -h "expedite\|Requeu" "$CLUSTER_DIR/log/slurmctld.log" | grep "JobId=$1\b" | tail -n 4; }

    printf '#!/bin/bash\necho "config error: no such dataset" >&2\nexit 78\n' > "$w/plain.sh"
    cat > "$w/user.sh" <<EOS
#!/bin/bash
srun $L --log $w/log-user $per_node -- bash -c 'echo "config error: no such dataset" >&2; exit 78'
EOS
    cat > "$w/down.sh" <<EOS
#!/bin/bash
echo "attempt \${SLURM_RESTART_COUNT:-0} on \$SLURM_JOB_NODELIST"
srun $L --log $w/log-down $per_node --requeue-on preemption,node_fault,gpu_fault -- bash -c '
  [ "\${SLURM_RESTART_COUNT:-0}" = 0 ] || { echo "rank \$SLURM_PROCID ran again"; exit 0; }
  echo \$SLURMD_NODENAME >> $w/down.started; sleep 120'
EOS
    cat > "$w/xid.sh" <<EOS
#!/bin/bash
echo "attempt \${SLURM_RESTART_COUNT:-0}"
srun $L --log $w/log-xid $per_node -- bash -c '
  [ "\${SLURM_RESTART_COUNT:-0}" = 0 ] || { echo "attempt \$SLURM_RESTART_COUNT ran"; exit 0; }
  echo "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus." >&2; exit 1'
EOS
    sub() { with_timeout 30 sbatch --parsable --requeue=expedite -t 5 "$@" 2>&1; }
    j0=$(sub -N1 -n1 -w n2 -o "$w/plain-%j.out" "$w/plain.sh")
    j1=$(sub -N1 -n1 -w n2 -o "$w/user-%j.out" "$w/user.sh")
    j2=$(sub -N2 -n2 -w n3,n4 -o "$w/down-%j.out" "$w/down.sh")
    j3=$(sub -N1 -n1 -x n3,n4 -o "$w/xid-%j.out" "$w/xid.sh")

    # 2. Once both ranks run, n4 (not the batch host) goes DOWN: Slurm requeues the job.
    for i in $(seq 1 300); do [ "$(cat "$w/down.started" 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.2; done
    scontrol update NodeName=n4 State=DOWN Reason=gputopo-test-expedite
    # Requeued (restart count 1): n4 back in service, where the next attempt (-w n3,n4) runs.
    wait_restart_count "$j2" 30
    scontrol update NodeName=n4 State=RESUME >/dev/null 2>&1

    name=${names[0]}
    if done_or_held "$j0" 60 && { [ "$st" = REQUEUE_HOLD ] || [ "${st#*(}" = "JobHeldUser)" ]; }; then
        tap_ok "$name ($st)"
    else
        tap_not_ok "$name" "state '$st' $(why "$j0")"
    fi
    scancel "$j0" 2>/dev/null

    name=${names[1]}
    if done_or_held "$j1" 60 && [ "$st" = FAILED ] && [ "$(field "$j1" ExitCode)" = 78:0 ] &&
       [ "$(field "$j1" Restarts)" = 0 ] && [ "$(field "$j1" Requeue)" = 0 ] &&
       grep -q "Requeue is set to 0" "$w"/user-"$j1".out; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "state '$st' $(why "$j1")" "$(tail -n 5 "$w"/user-"$j1".out 2>&1)"
        scancel "$j1" 2>/dev/null
    fi

    name=${names[2]}
    if done_or_held "$j2" 90 && [ "$st" = COMPLETED ] && [ "$(field "$j2" Restarts)" = 1 ] &&
       [ "$(grep -c 'ran again' "$w"/down-"$j2".out)" = 2 ]; then
        tap_ok "$name"
        echo "# the launchers' ends in the job: $(grep -h '"event": "\(requeue_decision\|end\|failure\)"' "$w"/log-down/*.jsonl 2>/dev/null | grep -o '"\(action\|class\)": "[a-z_]*"' | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
    else
        tap_not_ok "$name" "state '$st' $(why "$j2")" "$(cat "$w"/down-"$j2".out 2>&1 | tail -n 8)" \
            "$(grep -h 'requeue_decision\|"end"' "$w"/log-down/*.jsonl 2>/dev/null | cut -c1-300 | tail -n 6)"
        scancel "$j2" 2>/dev/null
    fi

    name=${names[3]}
    if done_or_held "$j3" 90 && [ "$st" = COMPLETED ] && [ "$(field "$j3" Restarts)" = 1 ] &&
       grep -q "attempt 1 ran" "$w"/xid-"$j3".out; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "state '$st' $(why "$j3")" "$(tail -n 8 "$w"/xid-"$j3".out 2>&1)"
        scancel "$j3" 2>/dev/null
    fi
    exit 0
)
exit 0
