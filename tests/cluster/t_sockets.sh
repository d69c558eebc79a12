#!/usr/bin/env bash
# The second cluster layout (harness.sh GPUTOPO_CLUSTER_LAYOUT=sockets), a cluster of this
# script's own: s1 s2 s3, 8 GPUs on 2 sockets each, one NUMA node per socket, described on
# this host's CPUs 0 and 1 (socket 0 = CPU 0, socket 1 = CPU 1), the GPU order reversed on
# s2, NICs on socket 0 only on s3; no job_submit.lua (a site that keeps its own). What each
# task really has (view.sh / check_view.py: Cpus_allowed_list, get_mempolicy, the devices it
# can open, SLURM_CPU_BIND), issue 34:
#  - -c 2 next to a GPU with one local CPU: the task gets the 2 CPUs it asked Slurm for,
#    its GPU's first (-c 3 needs a third CPU this layout does not describe: the unit tests
#    [cpus_per_task] cover it);
#  - the topology's NUMA node 1 does not exist on this host: a socket-1 task's CPUs are
#    applied and said so, its memory policy is not and said so, SLURM_CPU_BIND stays true;
#  - heterogeneous steps (srun A : B, A : B : C; plugin, and gputopo-launch alone): every
#    component bound, on its own node;
#  - share/island under per-task device cgroups: said once, with the release's way out;
#  - requeue without gputopo's job_submit.lua: #SBATCH --requeue and SBATCH_REQUEUE are
#    read and the job is requeued; sbatch --requeue on the command line is read from the
#    SubmitLine where Slurm shows it (25.11+, or accounting), else the message names
#    every source read and what the site can install.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 15
build=${1:-build}
[ -n "${CLUSTER_BUILD:-}" ] && build=$CLUSTER_BUILD
out=$(mktemp -d /tmp/gputopo-sockets.XXXXXX)
at_least() { [ "$(printf '%s\n%s\n' "$running" "$1" | sort -V | head -n 1)" = "$1" ]; }

(
    unset CLUSTER_DIR
    export GPUTOPO_CLUSTER_LAYOUT=sockets GPUTOPO_CLUSTER_JOB_SUBMIT=0 GPUTOPO_CLUSTER_TOPOLOGY=tree
    if ! cluster_start "$build" > "$out/start" 2>&1; then
        for i in $(seq 1 15); do tap_not_ok "sockets layout: case $i" "the cluster did not start: $(tail -n 20 "$out/start")"; done
        exit 1
    fi
    w=$CLUSTER_DIR/tmp
    running=$(sbatch --version | awk '{print $2}')  # "22.05.8"
    cg=0
    [ "$CLUSTER_TASK_CONFIG" = cgroup ] && cg=1
    echo "# sockets layout on Slurm $running: $(cluster_config_line)"
    # SLURM_CPU_BIND is task/affinity's (cgroup configuration) for gputopo to keep true.
    truth=()
    [ "$cg" = 1 ] && truth=(--cpu-bind-true)

    # check NAME NTASKS CHECK-ARGS... -- SRUN-ARGS...
    check() {
        local name=$1 n=$2 args=()
        shift 2
        while [ "$1" != "--" ]; do args+=("$1"); shift; done
        shift
        if ! with_timeout 90 srun "$@" "$here/view.sh" > "$w/out" 2> "$w/err"; then
            tap_not_ok "$name" "srun $* failed: $(tail -n 3 "$w/err")"
            return
        fi
        python3 "$here/check_view.py" "$name" "$w/out" --tasks "$n" "${args[@]}"
    }

    # 1. -c 2, the GPU's socket has one CPU: both CPUs, on either order of the GPUs.
    check "-c 2 --gpus=1 next to one local CPU: the task gets the 2 CPUs it asked for (s1)" 1 --cpus "0-1" \
        "${truth[@]}" -- -w s1 -n1 -c2 --gpus=1 --gpu-topo=closest
    check "-c 2 --gpus=1, GPU order reversed: the task gets the 2 CPUs it asked for (s2)" 1 --cpus "0-1" \
        "${truth[@]}" -- -w s2 -n1 -c2 --gpus=1 --gpu-topo=closest
    tap_ok "-c 3 next to fewer local CPUs # SKIP this layout describes 2 CPUs (the unit tests [cpus_per_task] cover -c 3)"

    # 2. NUMA node 1 of the topology is not this host's: the socket-1 task (s2: GPUs 0-3)
    # runs on CPU 1, memory default, and one line says both; task 1 (socket 0) on CPU 0.
    name="NUMA node 1 absent on the host: CPUs applied and said so, memory not, SLURM_CPU_BIND true (s2)"
    check "$name" 2 --cpus "1;0" "${truth[@]}" -- -w s2 -n2 --gpus=8 --gpu-topo=closest
    # said NAME: one line says the CPUs were applied and the memory policy was not.
    said() {
        local n_said
        n_said=$(grep -c 'CPUs 1 applied; memory policy not applied: NUMA node 1 does not exist on this host' "$w/err")
        if [ "$n_said" = 1 ] && ! grep -q 'affinity not applied' "$w/err" && grep -q 'mempolicy=default' "$w/out"; then
            tap_ok "$1"
        else
            tap_not_ok "$1" "said $n_said times" "$(cat "$w/err")" "$(cat "$w/out")"
        fi
    }
    said "NUMA node 1 absent (s2, task 0 on socket 1): one line says the CPUs were applied and the memory policy was not"
    # s1: the socket-1 task is task 1, and it is the one that speaks.
    check "NUMA node 1 absent on the host, socket-1 task is task 1: CPUs applied, SLURM_CPU_BIND true (s1)" 2 \
        --cpus "0;1" "${truth[@]}" -- -w s1 -n2 --gpus=8 --gpu-topo=closest
    said "NUMA node 1 absent (s1, task 1 on socket 1): task 1 says so, once"

    # 3. Heterogeneous steps: each component's tasks bound on their own node.
    # het NAME NODES... -- SRUN ARGS (components separated by ':')
    het() {
        local name=$1 nodes=() bad=""
        shift
        while [ "$1" != "--" ]; do nodes+=("$1"); shift; done
        shift
        if ! with_timeout 90 srun "$@" "$here/view.sh" > "$w/het" 2> "$w/het.err"; then
            tap_not_ok "$name" "srun $* failed: $(tail -n 3 "$w/het.err")"
            return
        fi
        local n
        for n in "${nodes[@]}"; do
            grep -q "^TASK .* node=$n .*gpus=[0-9]" "$w/het" || bad="$bad $n:unbound"
        done
        [ "$(grep -c '^TASK ' "$w/het")" = "${#nodes[@]}" ] || bad="$bad tasks:$(grep -c '^TASK ' "$w/het")"
        grep -q 'unbound\|names this node' "$w/het.err" && bad="$bad message"
        if [ -z "$bad" ]; then tap_ok "$name"; else tap_not_ok "$name" "$bad" "$(cat "$w/het" "$w/het.err")"; fi
    }
    het "heterogeneous step, 2 components (s1 : s2): both bound" s1 s2 -- \
        -w s1 -n1 --gpus=1 --gpu-topo=closest : -w s2 -n1 --gpus=2 --gpu-topo=closest
    het "heterogeneous step, 2 components in the other order (s2 : s1): both bound" s2 s1 -- \
        -w s2 -n1 --gpus=2 --gpu-topo=closest : -w s1 -n1 --gpus=1 --gpu-topo=closest
    het "heterogeneous step, 3 components (s3 : s1 : s2): all bound" s3 s1 s2 -- \
        -w s3 -n1 --gpus=1 --gpu-topo=closest : -w s1 -n1 --gpus=1 --gpu-topo=closest : -w s2 -n1 --gpus=1 --gpu-topo=closest

    plugstack_set_line ""
    het "heterogeneous step, gputopo-launch alone (s2 : s1): both bound" s2 s1 -- \
        -w s2 -n1 --gpus=2 : -w s1 -n1 --gpus=1 "$CLUSTER_BUILD/gputopo-launch" --topology "$CLUSTER_DIR/topo/%n.xml" --
    plugstack_default

    # 4. island under per-task device cgroups: once, with the release's way out.
    name="island under per-task device cgroups: said once per node, with the way Slurm $running has"
    with_timeout 60 srun -N1 -w s1 -n2 --gpus-per-task=1 --gpu-topo=island /bin/true > "$w/isl" 2>&1
    n_said=$(grep -c "island: ranks on this node cannot reach each other's GPUs" "$w/isl")
    if at_least 23.11; then way='--gres-flags=allow-task-sharing'; else way='--gpus-per-node with --ntasks-per-node'; fi
    if [ "$cg" = 0 ]; then
        if [ "$n_said" = 0 ]; then tap_ok "$name # SKIP no device cgroups (task/none): nothing said"
        else tap_not_ok "$name" "said without device cgroups" "$(cat "$w/isl")"; fi
    elif [ "$n_said" = 1 ] && grep -qF -- "$way" "$w/isl"; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "said $n_said times, expected '$way'" "$(cat "$w/isl")"
    fi

    # 5. Requeue without job_submit.lua. A GPU fault on attempt 0, success on attempt 1.
    L=$CLUSTER_BUILD/gputopo-launch
    mkjob() {  # FILE DIRECTIVE
        printf '%s\n' '#!/bin/bash' "$2" \
            "srun $L --max-restarts 1 -- bash -c '[ \"\${SLURM_RESTART_COUNT:-0}\" = 0 ] || exit 0; echo \"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\" >&2; exit 1'" \
            > "$1"
    }
    mkjob "$w/script.sh" "#SBATCH --requeue"
    mkjob "$w/plain.sh" "# no directive"
    # No -w: the shipped EpilogSlurmctld (conf.d/launcher.conf) keeps the faulty node out.
    js=$(with_timeout 30 sbatch --parsable -t 5 -N1 -n1 -o "$w/script-%j.out" "$w/script.sh")
    jc=$(with_timeout 30 sbatch --parsable -t 5 -N1 -n1 --requeue -o "$w/cmdline-%j.out" "$w/plain.sh")
    je=$(SBATCH_REQUEUE=1 with_timeout 30 sbatch --parsable -t 5 -N1 -n1 -o "$w/env-%j.out" "$w/plain.sh")
    # Until each job ends (released from Slurm's requeue hold at once), at most 150 s.
    deadline=$(( $(date +%s) + 150 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        left=0
        for j in $js $jc $je; do
            st=$(job_field "$j" JobState)
            case "$st" in COMPLETED|FAILED|CANCELLED|TIMEOUT|"") continue ;; esac
            left=1
            [ "$st" = PENDING ] && [ "$(job_field "$j" Reason)" = BeginTime ] &&
                scontrol update JobId="$j" StartTime=now >/dev/null 2>&1
        done
        [ "$left" = 0 ] && break
        sleep 0.3
    done
    requeued() { [ "$(job_field "$1" JobState)" = COMPLETED ] && [ "$(job_field "$1" Restarts)" = 1 ]; }
    job_says() { echo "job $1: $(job_field "$1" JobState) Restarts=$(job_field "$1" Restarts)"; cat "$w/$2-$1.out" 2>&1 | head -n 8; }
    name="requeue without job_submit.lua: #SBATCH --requeue in the script is read, the job is requeued"
    if requeued "$js"; then tap_ok "$name"; else tap_not_ok "$name" "$(job_says "$js" script)"; fi
    name="requeue without job_submit.lua: SBATCH_REQUEUE=1 at submission is read, the job is requeued"
    if requeued "$je"; then tap_ok "$name"; else tap_not_ok "$name" "$(job_says "$je" env)"; fi
    name="requeue without job_submit.lua: sbatch --requeue on the command line (Slurm $running)"
    if scontrol show job -o "$jc" 2>/dev/null | grep -q ' SubmitLine=' ||
       sacct -n -X -j "$jc" -o SubmitLine 2>/dev/null | grep -q requeue; then
        # Slurm shows the SubmitLine (scontrol 25.11+, or accounting): read there.
        if requeued "$jc"; then tap_ok "$name: read from the SubmitLine"; else tap_not_ok "$name" "$(job_says "$jc" cmdline)"; fi
    elif [ "$(job_field "$jc" Restarts)" = 0 ] &&
         grep -q 'did not ask for a requeue (read: the Comment: .*the SubmitLine: not readable .*SBATCH_REQUEUE: unset; the batch script.s #SBATCH lines: neither .*job_submit.lua.*accounting' \
             "$w/cmdline-$jc.out"; then
        tap_ok "$name: no SubmitLine here; not requeued, and the message names every source read and what to install"
    else
        tap_not_ok "$name" "$(job_says "$jc" cmdline)"
    fi
    cluster_stop
)
rc=$?
rm -rf "$out"
exit $rc
