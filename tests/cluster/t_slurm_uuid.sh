#!/usr/bin/env bash
# End-to-end: GPUs named by UUID in CUDA_VISIBLE_DEVICES, written by Slurm itself.
# Debian's Slurm has no gpu/nvml plugin; its gres/gpu takes fake_gpus.conf
# (<type>|<cpus>|<cpu range>|<links>|<device file>|<unique id>|<flags>) instead of
# detection and then writes the unique ids into CUDA_VISIBLE_DEVICES exactly as
# with AutoDetect=nvml (gres_common.c: "If unique_id is set for the device, assume
# that we want to use it for the env var"). This test starts its own cluster
# with such a file:
#   n3: 4 GPUs with the UUIDs of the first 4 GPUs of the AWS g4dn.metal hwloc
#       fixture, which the plugin reads as n3's topology: UUIDs resolve.
#   n2: 8 MIG-... ids no topology knows: the visible devices stay as Slurm set them.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
build=${1:-build}
src=$(cd "$here/../.." && pwd)
g4dn=$src/tests/fixtures/topologies/hwloc/aws-g4dn.metal_2xXeon8259CL_8xT4_EFA_hwloc2.xml
gputopo=$(cd "$build" && pwd)/gputopo

# The g4dn GPUs' UUIDs in gputopo's index order (PCI bus order), from the fixture itself.
mapfile -t uuids < <(python3 - "$g4dn" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
# Each PCI device object with a NVIDIAUUID info below it, in document (= PCI) order.
pairs = re.findall(r'<object type="PCIDev"[^>]*pci_busid="([0-9a-f:.]+)"(?:(?!<object type="PCIDev").)*?NVIDIAUUID" value="([^"]+)"', text, re.S)
for bus, uuid in sorted(pairs):
    print(uuid)
EOF
)
if [ "${#uuids[@]}" -lt 4 ]; then
    echo "not ok - uuid: could not read the g4dn fixture's UUIDs (${#uuids[@]})"
    exit 1
fi
# <cpu range>: Slurm 23.02+ reads it as the node's cores (slurmctld: "invalid GRES core
# specification (0-223) on node n3" for n2/n3's 224 CPUs = 112 cores), 22.05 as CPUs; 0-111
# is valid as both. <flags>: env_uuid (26.05: gres.conf Flags=env_uuid, without which whole
# GPUs get indices; earlier releases ignore the word and always write unique ids).
fake=""
for i in 0 1 2 3; do fake+="h100|224|0-111|(null)|@CLUSTER_DIR@/dev/n3/nvidia$i|${uuids[$i]}|nvidia_gpu_env,env_uuid"$'\n'; done
for i in 0 1 2 3 4 5 6 7; do fake+="h100|224|0-111|(null)|@CLUSTER_DIR@/dev/n2/nvidia$i|MIG-0000000$i-1111-2222-3333-444444444444|nvidia_gpu_env,env_uuid"$'\n'; done

tap_plan 5
# Our own cluster (another configuration than run.sh's).
unset CLUSTER_DIR
# fake_gpus.conf is not shipped to configless nodes: this cluster has config files.
# task/none: under ConstrainDevices Slurm 22.05 writes the unique id of the step's first GPU
# in every task of a per-task binding (seen with fake_gpus.conf), so the UUID cases run
# where Slurm's per-task UUIDs are its own record (AutoDetect=nvml is not available here).
GPUTOPO_CLUSTER_CGROUP=0 GPUTOPO_CLUSTER_CONFIGLESS=0 GPUTOPO_FAKE_GPUS_CONF=$fake cluster_start "$build" || { echo "not ok - uuid: cluster with fake_gpus.conf"; exit 1; }
unset GPUTOPO_FAKE_GPUS_CONF  # multi-line: kept out of the tasks' environment
out=$CLUSTER_DIR/tmp/uuid.$$
mkdir -p "$CLUSTER_DIR/tmp/uuid-topo"
cp "$g4dn" "$CLUSTER_DIR/tmp/uuid-topo/n3.xml"
cp "$(node_topology n2)" "$CLUSTER_DIR/tmp/uuid-topo/n2.xml"

field() {  # field FILE LOCALID NAME: the probe value of NAME for local task LOCALID
    awk -v id="$2" -v k="$3" '/^PROBE/ {delete v; for (i=2;i<=NF;i++) if (index($i,"=")) {split($i,kv,"="); v[kv[1]]=kv[2]}
        if (v["SLURM_LOCALID"] == id) print v[k]}' "$1"
}

# Slurm itself writes the UUIDs (no plugin).
name="uuid: Slurm's gres/gpu puts the unique ids in CUDA_VISIBLE_DEVICES (no plugin)"
plugstack_set_line ""
if timeout 60 srun -w n3 -n4 --gpus-per-task=1 "$here/probe.sh" > "$out" 2> "$out.err" &&
   [ "$(for t in 0 1 2 3; do field "$out" $t CUDA_VISIBLE_DEVICES; done | sort | tr '\n' ' ')" = \
     "$(printf '%s\n' "${uuids[@]:0:4}" | sort | tr '\n' ' ')" ]; then
    tap_ok "$name"
else
    tap_not_ok "$name" "$(grep PROBE "$out")" "$(head -n 3 "$out.err")"
fi
plugstack_set "topology=$CLUSTER_DIR/tmp/uuid-topo/%n.xml"

# One GPU per task, no per-task device cgroup (task/none): every task can open the step's GPUs, so
# share (the default for one GPU per task) holds with UUIDs as with indices (issue 32): the step's 4
# UUIDs, the task's GPU at position LOCAL_RANK; GPUTOPO_GPUS is that GPU; CPUs around it.
name="uuid: --gpus-per-task=1, no per-task cgroup: the step's 4 UUIDs, the task's at LOCAL_RANK, CPUs of that GPU"
bad=""
if timeout 60 srun -w n3 -n4 --gpus-per-task=1 --gpu-topo=closest "$here/probe.sh" > "$out" 2> "$out.err"; then
    for t in 0 1 2 3; do
        cvd=$(field "$out" $t CUDA_VISIBLE_DEVICES)
        g=$(field "$out" $t GPUTOPO_GPUS)
        IFS=, read -r -a seen <<< "$cvd"
        [ "$(printf '%s\n' "${seen[@]}" | sort | tr '\n' ' ')" = "$(printf '%s\n' "${uuids[@]:0:4}" | sort | tr '\n' ' ')" ] ||
            bad+=" task $t: CUDA_VISIBLE_DEVICES=$cvd is not the step's 4 UUIDs;"
        [ -n "$g" ] && [ "${seen[$t]:-}" = "${uuids[$g]}" ] || { bad+=" task $t: CUDA_VISIBLE_DEVICES=$cvd GPUTOPO_GPUS=$g;"; continue; }
        # The step's plan (4 GPUs, 4 tasks) when it gave this task that GPU, else the plan around it alone.
        want=$("$gputopo" plan --topology "$g4dn" --gpus 0-3 --ntasks 4 --format json |
               python3 -c 'import json,sys; t=json.load(sys.stdin)["tasks"][int(sys.argv[1])]; print(t["cpus"] if t["gpus"] == [int(sys.argv[2])] else "")' "$t" "$g")
        [ -n "$want" ] || want=$("$gputopo" plan --topology "$g4dn" --gpus "$g" --ntasks 1 --format json |
               python3 -c 'import json,sys; print(json.load(sys.stdin)["tasks"][0]["cpus"])')
        [ "$(field "$out" $t GPUTOPO_CPUS)" = "$want" ] || bad+=" task $t: GPUTOPO_CPUS=$(field "$out" $t GPUTOPO_CPUS), plan $want;"
    done
else
    bad="srun failed: $(tail -n 3 "$out.err")"
fi
if [ -z "$bad" ]; then tap_ok "$name"; else tap_not_ok "$name" "$bad"; fi

# All 4 GPUs visible to every task: the same UUIDs, position = local id holds the task's GPU.
name="uuid: --gpus-per-node=4: every task sees Slurm's 4 UUIDs, its own GPU's at position LOCAL_RANK"
bad=""
if timeout 60 srun -w n3 -n4 --gpus-per-node=4 --gpu-topo=closest,verbose "$here/probe.sh" > "$out" 2> "$out.err"; then
    for t in 0 1 2 3; do
        cvd=$(field "$out" $t CUDA_VISIBLE_DEVICES)
        g=$(field "$out" $t GPUTOPO_GPUS)
        IFS=, read -r -a seen <<< "$cvd"
        [ "$(printf '%s\n' "${seen[@]}" | sort | tr '\n' ' ')" = "$(printf '%s\n' "${uuids[@]:0:4}" | sort | tr '\n' ' ')" ] ||
            bad+=" task $t: CUDA_VISIBLE_DEVICES=$cvd is not Slurm's 4 UUIDs;"
        [ -n "$g" ] && [ "${seen[$t]:-}" = "${uuids[$g]}" ] || bad+=" task $t: position $t is ${seen[$t]:-none}, GPU $g is ${uuids[${g:-0}]};"
    done
    grep -q "visible=GPU-" "$out.err" || bad+=" verbose shows no UUIDs;"
else
    bad="srun failed: $(tail -n 3 "$out.err")"
fi
if [ -z "$bad" ]; then tap_ok "$name"; else tap_not_ok "$name" "$bad"; fi

# isolate with all 4 UUIDs given to every task: each task sees its own GPU's UUID alone (issue 32).
name="uuid: --gpus-per-node=4, isolate: each task sees only its own GPU's UUID"
bad=""
if timeout 60 srun -w n3 -n4 --gpus-per-node=4 --gpu-topo=closest,isolate "$here/probe.sh" > "$out" 2> "$out.err"; then
    for t in 0 1 2 3; do
        cvd=$(field "$out" $t CUDA_VISIBLE_DEVICES)
        g=$(field "$out" $t GPUTOPO_GPUS)
        [ -n "$g" ] && [ "$cvd" = "${uuids[$g]}" ] || bad+=" task $t: CUDA_VISIBLE_DEVICES=$cvd GPUTOPO_GPUS=$g;"
    done
else
    bad="srun failed: $(tail -n 3 "$out.err")"
fi
if [ -z "$bad" ]; then tap_ok "$name"; else tap_not_ok "$name" "$bad"; fi

# MIG ids no GPU of n2's topology knows: left as Slurm set them, said once.
name="uuid: MIG ids the topology does not know: CUDA_VISIBLE_DEVICES as Slurm set it, one message"
bad=""
if timeout 60 srun -w n2 -n2 --gpus-per-task=1 --gpu-topo=closest "$here/probe.sh" > "$out" 2> "$out.err"; then
    for t in 0 1; do
        case "$(field "$out" $t CUDA_VISIBLE_DEVICES)" in MIG-*-444444444444) ;; *) bad+=" task $t: $(field "$out" $t CUDA_VISIBLE_DEVICES);" ;; esac
        [ -n "$(field "$out" $t GPUTOPO_CPUS)" ] || bad+=" task $t: no GPUTOPO_CPUS;"
    done
    [ "$(grep -c "which no GPU of this node's topology knows" "$out.err")" = 1 ] || bad+=" expected one message: $(head -n 3 "$out.err")"
else
    bad="srun failed: $(tail -n 3 "$out.err")"
fi
if [ -z "$bad" ]; then tap_ok "$name"; else tap_not_ok "$name" "$bad"; fi

cluster_stop
exit 0
