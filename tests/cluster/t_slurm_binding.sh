#!/usr/bin/env bash
# End-to-end: gputopo with Slurm's own binding options (release-agnostic: the
# expectations come from what Slurm put in each task's environment and from
# `gputopo plan`, not from one release's behaviour).
#   - --gpu-bind forms (default, single:1, map_gpu, mask_gpu, closest, none,
#     SLURM_GPU_BIND in srun's environment, --tres-bind=gres/gpu:... where srun
#     has it): with an explicit binding every task keeps the GPUs Slurm gave it
#     (CUDA_VISIBLE_DEVICES as Slurm set it, GPUTOPO_GPUS inside it, GPUTOPO_CPUS
#     the CPUs gputopo plans around those GPUs), verbose says "gpus kept from
#     --gpu-bind"; without one gputopo orders the GPUs itself.
#   - an explicit --cpu-bind is kept (no affinity applied) on n1 (real CPUs).
#   - UUIDs as Slurm's gres/gpu writes them: t_slurm_uuid.sh (its own cluster) and
#     the unit tests "[slurm-uuid]" (MIG through the fake NVML).
#   - a step without GPUs under --gpu-topo binds CPUs and memory only.
#   - srun from a "login node": plugin loaded, no topology file, no cache.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || { echo "not ok - slurm binding: cluster"; exit 1; }
if srun --help 2>&1 | grep -q -- '--tres-bind'; then tap_plan 14; else tap_plan 13; fi

out=$CLUSTER_DIR/tmp/bind.$$
mkdir -p "$CLUSTER_DIR/tmp"
node=n3
ngpu=4

# The CPUs and GPUs `gputopo plan` gives one task holding exactly GPUS on NODE.
plan_cpus() {
    "$CLUSTER_BUILD/gputopo" plan --topology "$(node_topology "$1")" --gpus "$2" --ntasks 1 --mode closest \
        --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tasks"][0]["cpus"])'
}

# check_kept NAME EXPECT_KEPT(yes|no) -- SRUN-ARGS
#   yes: every task's CUDA_VISIBLE_DEVICES is what Slurm alone gives it (the same srun
#        with --gpu-topo=none; unset when Slurm sets none, as 22.05 does for none),
#        GPUTOPO_GPUS is inside it, GPUTOPO_CPUS is what gputopo plans around
#        GPUTOPO_GPUS, verbose says "gpus kept from --gpu-bind".
#   no:  gputopo chose: the tasks' GPUTOPO_GPUS are the plan for the step's GPUs and
#        nothing says "gpus kept".
check_kept() {
    local name=$1 want=$2 a base=()
    shift 3
    # Slurm's own per-task view: the same srun with gputopo off.
    for a in "$@"; do case $a in --gpu-topo=*) base+=(--gpu-topo=none) ;; *) base+=("$a") ;; esac; done
    if ! timeout 120 srun "${base[@]}" "$here/probe.sh" > "$out.slurm" 2> "$out.err"; then
        tap_not_ok "$name" "srun ${base[*]} failed: $(tail -n 3 "$out.err")"
        return
    fi
    if ! timeout 120 srun "$@" "$here/probe.sh" > "$out" 2> "$out.err"; then
        tap_not_ok "$name" "srun $* failed: $(tail -n 3 "$out.err")"
        return
    fi
    local why
    why=$(python3 - "$out" "$out.err" "$want" "$CLUSTER_BUILD/gputopo" "$(node_topology $node)" "$out.slurm" <<'EOF'
import json, subprocess, sys
out, err, want, gputopo, topo, slurm_out = sys.argv[1:7]
def expand(s):
    r = []
    for p in s.split(","):
        if "-" in p:
            a, b = p.split("-"); r += list(range(int(a), int(b) + 1))
        elif p:
            r.append(int(p))
    return r
def probes(path):
    r = []
    for line in open(path):
        if line.startswith("PROBE"):
            r.append(dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv))
    return r
tasks = probes(out)
constrained = __import__("os").environ.get("CLUSTER_TASK_CONFIG") == "cgroup"
# What Slurm alone gave each task (gputopo off), by local id.
slurm_view = {t["SLURM_LOCALID"]: t for t in probes(slurm_out)}
if not tasks:
    sys.exit("no task printed a probe line")
stderr = open(err).read()
def plan(gpus, ntasks):
    j = subprocess.run([gputopo, "plan", "--topology", topo, "--gpus", gpus, "--ntasks", str(ntasks),
                        "--mode", "closest", "--format", "json"], capture_output=True, text=True, check=True).stdout
    return json.loads(j)["tasks"]
bad = []
if want == "yes":
    if stderr.count("gpus kept from --gpu-bind") != len(tasks):
        bad.append("expected 'gpus kept from --gpu-bind' once per task in verbose")
    for t in tasks:
        alone = slurm_view.get(t["SLURM_LOCALID"], {})
        cvd = t.get("CUDA_VISIBLE_DEVICES")
        mine = t.get("GPUTOPO_GPUS", "")
        if cvd != alone.get("CUDA_VISIBLE_DEVICES"):
            bad.append("task %s: CUDA_VISIBLE_DEVICES=%s, Slurm alone gives %s"
                       % (t["SLURM_LOCALID"], cvd, alone.get("CUDA_VISIBLE_DEVICES")))
        # The task's GPUs as Slurm gave them: the narrower of SLURM_STEP_GPUS and CUDA_VISIBLE_DEVICES;
        # under ConstrainDevices (those count 0..k-1 in the task's own cgroup) the devices it can open.
        cands = [expand(x) for x in (t.get("SLURM_STEP_GPUS"), cvd) if x]
        slurm = ",".join(map(str, min(cands, key=len))) if cands else ""
        if constrained:
            opened = [int(d[6:]) for d in t.get("open", "-").split(",") if d.startswith("nvidia")]
            slurm = ",".join(map(str, opened)) if cvd else ""
        if not slurm:
            # --gpu-bind=none (22.05): Slurm sets no GPU variable for the task; gputopo sets none either.
            if not mine:
                bad.append("task %s: no GPUTOPO_GPUS" % t["SLURM_LOCALID"])
            continue
        if not mine or not set(expand(mine)) <= set(expand(slurm)):
            bad.append("task %s: GPUTOPO_GPUS=%s not within Slurm's %s" % (t["SLURM_LOCALID"], mine, slurm))
        if mine and expand(mine) == expand(slurm) and not constrained:
            # Around the kept GPU: the step's plan for this task when it planned that GPU, else that GPU alone.
            step_gpus = sorted(set(g for x in tasks for g in expand(slurm_view.get(x["SLURM_LOCALID"], {}).get(
                "SLURM_STEP_GPUS", "")) or expand(x.get("SLURM_STEP_GPUS", ""))))
            ok = [plan(mine, 1)[0]["cpus"]]
            if step_gpus:
                mine_in_step = plan(",".join(map(str, step_gpus)), len(tasks))[int(t["SLURM_LOCALID"])]
                if mine_in_step["gpus"] == expand(mine):
                    ok.append(mine_in_step["cpus"])
            want_cpus = " or ".join(ok)
            if t.get("GPUTOPO_CPUS") not in ok:
                bad.append("task %s: GPUTOPO_CPUS=%s, gputopo plan around GPU %s: %s"
                           % (t["SLURM_LOCALID"], t.get("GPUTOPO_CPUS"), mine, want_cpus))
else:
    if "gpus kept" in stderr:
        bad.append("says 'gpus kept' without an explicit --gpu-bind")
    step = sorted(set(g for t in tasks for g in expand(t.get("SLURM_STEP_GPUS", ""))))
    p = plan(",".join(map(str, step)), len(tasks))
    for t in tasks:
        exp = ",".join(map(str, p[int(t["SLURM_LOCALID"])]["gpus"]))
        if constrained:
            # Each task's own device cgroup: the GPUs it can open are the ones it must name.
            exp = ",".join(d[6:] for d in t.get("open", "-").split(",") if d.startswith("nvidia"))
        if t.get("GPUTOPO_GPUS") != exp:
            bad.append("task %s: GPUTOPO_GPUS=%s, plan %s" % (t["SLURM_LOCALID"], t.get("GPUTOPO_GPUS"), exp))
print("; ".join(bad))
EOF
) || why="checker failed: $why"
    if [ -z "$why" ]; then tap_ok "$name"; else tap_not_ok "$name" "$why" "stderr: $(head -n 3 "$out.err")"; fi
}

common=(-w $node -N1 -n$ngpu --gpus-per-task=1 --gpu-topo=closest,verbose)
check_kept "gpu-bind: default (no --gpu-bind): gputopo orders Slurm's per-task GPUs" no -- "${common[@]}"
check_kept "gpu-bind: --gpu-bind=map_gpu:3,2,1,0 kept; CPUs around each task's GPU" yes -- \
    "${common[@]}" --gpu-bind=map_gpu:3,2,1,0
check_kept "gpu-bind: --gpu-bind=mask_gpu:0x8,0x4,0x2,0x1 kept" yes -- "${common[@]}" --gpu-bind=mask_gpu:0x8,0x4,0x2,0x1
check_kept "gpu-bind: --gpu-bind=single:1 kept" yes -- "${common[@]}" --gpu-bind=single:1
check_kept "gpu-bind: --gpu-bind=closest kept" yes -- "${common[@]}" --gpu-bind=closest
check_kept "gpu-bind: --gpu-bind=none kept" yes -- "${common[@]}" --gpu-bind=none
check_kept "gpu-bind: --gpu-bind verbose,map_gpu:1,0,3,2 (separate word) kept" yes -- \
    "${common[@]}" --gpu-bind verbose,map_gpu:1,0,3,2
name="gpu-bind: SLURM_GPU_BIND=map_gpu:3,2,1,0 in srun's environment kept"
SLURM_GPU_BIND=map_gpu:3,2,1,0 check_kept "$name" yes -- "${common[@]}"
if srun --help 2>&1 | grep -q -- '--tres-bind'; then
    check_kept "gpu-bind: --tres-bind=gres/gpu:map_gpu:3,2,1,0 kept" yes -- "${common[@]}" \
        --tres-bind=gres/gpu:map_gpu:3,2,1,0
else
    echo "# srun $(srun --version | awk '{print $2}') has no --tres-bind: that form is checked on newer releases"
fi
# A --gpu-bind in the program's own arguments is not srun's.
check_kept "gpu-bind: --gpu-bind=map_gpu:... after the program is not srun's" no -- \
    "${common[@]}" "$here/probe.sh" --gpu-bind=map_gpu:3,2,1,0

# map_gpu on n3: the GPUs Slurm gave are the reverse of the tasks' ids, exactly.
name="gpu-bind: map_gpu:3,2,1,0 gives task i GPU 3-i and gputopo keeps it"
if timeout 60 srun "${common[@]}" --gpu-bind=map_gpu:3,2,1,0 "$here/probe.sh" > "$out" 2> "$out.err" &&
   [ "$(awk '/^PROBE/ {for (i=2;i<=NF;i++) if (index($i,"=")) {split($i,kv,"="); v[kv[1]]=kv[2]}
        if (ENVIRON["CLUSTER_TASK_CONFIG"] == "cgroup") { d = v["open"]; sub(/^nvidia/, "", d); print v["SLURM_LOCALID"] ":" v["GPUTOPO_GPUS"] ":" d }
        else print v["SLURM_LOCALID"] ":" v["GPUTOPO_GPUS"] ":" v["CUDA_VISIBLE_DEVICES"]}' "$out" | sort | tr '\n' ' ')" = "0:3:3 1:2:2 2:1:1 3:0:0 " ]; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep PROBE "$out")" "$(head -n 3 "$out.err")"
fi

# --cpu-bind=map_cpu on n1 (this host's CPUs): gputopo applies no affinity and says why.
host_cpus=$(python3 -c 'import os; c=sorted(os.sched_getaffinity(0)); print(c[0])')
name="cpu-bind: an explicit --cpu-bind=map_cpu is kept (no gputopo affinity), verbose says so"
if timeout 60 srun -w n1 -N1 -n1 --gpus-per-task=1 --cpu-bind=map_cpu:$host_cpus --gpu-topo=closest,verbose \
        "$here/probe.sh" > "$out" 2> "$out.err" &&
   grep -q "kept the user's --cpu-bind=.*map_cpu" "$out.err" && grep -q 'GPUTOPO_CPUS=' "$out"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep PROBE "$out")" "$(head -n 3 "$out.err")"
fi

# A step without GPUs: CPUs and memory bound, one note, the step runs.
name="no GPUs: a step without GPUs under --gpu-topo binds CPUs only and says so once"
if timeout 60 srun -w $node -N1 -n2 --gpu-topo=closest "$here/probe.sh" > "$out" 2> "$out.err" &&
   [ "$(grep -c 'has no GPUs here: CPUs and memory bound only' "$out.err")" = 1 ] &&
   [ "$(grep -c 'GPUTOPO_CPUS=' "$out")" = 2 ] && ! grep -q 'GPUTOPO_GPUS=' "$out"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep PROBE "$out")" "$(head -n 3 "$out.err")"
fi

# Login node: srun/sbatch with the plugin loaded, no topology file and no cache for it.
name="login node: srun works with the plugin loaded, no topology file, no cache"
plugstack_set "topology=$CLUSTER_DIR/topo/missing-%n.xml"
if timeout 60 srun -w $node -N1 -n1 --gpus-per-task=1 true > "$out" 2> "$out.err" && ! grep -q 'gputopo' "$out.err"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(head -n 3 "$out.err")"
fi
plugstack_default

rm -f "$out" "$out.err" "$out.slurm"
exit 0
