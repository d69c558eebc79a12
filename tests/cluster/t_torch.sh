#!/usr/bin/env bash
# A real torch.distributed job (Debian's python3-torch, gloo; tests/cluster/torch/train.py:
# init env://, all_reduce, one DDP step with its gradient checked, barrier) across the
# loopback cluster's nodes, whose names do not resolve (MASTER_ADDR comes from NodeAddr):
#  1. the plugin alone (srun --gpu-topo=closest python3 train.py): 8 ranks, torch's own
#     rank/world, RANK = GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK;
#  2. the plugin + gputopo-launch;  3. gputopo-launch alone;
#  4. torchrun under srun (torch 1.13 spellings) with the launcher per worker reading the
#     plugin's topology= file: each worker of a node has its own GPU (seen from inside);
#  5. sbatch;  6. island order with interleaved leaves (rackA = n1,n3): ranks 0,1 on n1,
#     2,3 on n3, 4,5 on n2, 6,7 on n4, GROUP_RANK = rank / 2;
#  6b. the plugin's layout (--gpu-topo=island,tp=2,pp=2,order=tp-cp-ep-pp-dp): torch's own
#     ranks on each node are the ones `gputopo ranks --layout` places there;
#  7-9. one rank's plain exception, SystemExit(3), CUDA OOM (sbatch --requeue jobs):
#     no requeue, the peers defer to the root cause;
#  10. an Xid-class error: one requeue, then success;  11. a rank's node dies (its
#     launcher and program killed): the peers find no cause, node_fault, one requeue.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
cluster_ensure "${1:-build}" || { echo "not ok - torch: cluster"; exit 1; }
tap_plan 13
PY=/usr/bin/python3
L=$CLUSTER_BUILD/gputopo-launch
T=$here/torch/train.py
w=$CLUSTER_DIR/tmp/torch.$$
mkdir -p "$w"
if ! $PY -c 'import torch.distributed' 2>/dev/null; then
    for i in $(seq 1 13); do tap_not_ok "torch: case $i" "no torch in $PY (make test-deps installs python3-torch)"; done
    exit 0
fi
export GLOO_SOCKET_IFNAME=lo

# FILE N: "" when FILE has N TORCHOK lines with distinct ranks 0..N-1 of world N,
# each with RANK = GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK; else what is wrong.
check_ok() {
    $PY - "$1" "$2" <<'PY'
import re, sys
rows = [dict(kv.split("=", 1) for kv in l.split("TORCHOK ", 1)[1].split()) for l in open(sys.argv[1]) if "TORCHOK " in l]
n = int(sys.argv[2])
errs = []
if sorted(int(r["rank"]) for r in rows) != list(range(n)):
    errs.append("ranks %s, expected 0..%d" % (sorted(r["rank"] for r in rows), n - 1))
for r in rows:
    if int(r["world"]) != n:
        errs.append("rank %s: world %s" % (r["rank"], r["world"]))
    try:
        if int(r["group"]) * int(r["lws"]) + int(r["local"]) != int(r["rank"]):
            errs.append("rank %s: GROUP_RANK %s x LOCAL_WORLD_SIZE %s + LOCAL_RANK %s" % (r["rank"], r["group"], r["lws"], r["local"]))
    except ValueError:
        errs.append("rank %s: %s" % (r["rank"], r))
print("; ".join(errs))
PY
}

run_case() {  # NAME OUT N CMD...
    local name=$1 out=$2 n=$3 bad
    shift 3
    if timeout 120 "$@" > "$out" 2> "$out.err"; then
        bad=$(check_ok "$out" "$n")
        [ -z "$bad" ] && tap_ok "$name" || tap_not_ok "$name" "$bad" "$(tail -n 5 "$out.err")"
    else
        tap_not_ok "$name" "failed: $(tail -n 8 "$out.err")"
    fi
}

run_case "torch: plugin alone: srun --gpu-topo=closest python3 train.py, 8 ranks on 4 nodes" "$w/p" 8 \
    srun -N4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=closest $PY "$T"
run_case "torch: plugin + gputopo-launch" "$w/pl" 8 \
    srun -N4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=island "$L" -- $PY "$T"
run_case "torch: gputopo-launch alone" "$w/l" 8 \
    srun -N4 --ntasks-per-node=2 --gpus-per-task=1 "$L" --gpu-topo none -- $PY "$T"

# 4. torchrun (1.13: underscore spellings; --redirects 1 --tee 1 for Python 3.11) under
# the plugin, the launcher per worker, as the user guide has it: no --topology, the
# launcher reads the file the plugin's plugstack.conf names (topology=.../%n.xml).
# Each worker says from inside what it really has (task-view: the device files it can
# open, Cpus_allowed_list): its GPU is the one torch.cuda.set_device(LOCAL_RANK) opens,
# position LOCAL_RANK of its CUDA_VISIBLE_DEVICES among the devices it can open (the only
# one when it sees one); n1's topology here puts GPU 0 beside this host's CPU 0 and GPU 1
# beside CPU 1, so each worker there is bound to the CPU of its own GPU (unbound, both
# kept the task's 0-1, -c 2).
mkdir -p "$w/topo"
cp "$CLUSTER_DIR"/topo/*.xml "$w/topo/"
$PY - "$w/topo/n1.xml" <<'PY'
import sys
out = ['<system version="1">']
for i, (gpu, nic) in enumerate([("0000:17:00.0", "0000:18:00.0"), ("0000:3a:00.0", "0000:3b:00.0")]):
    other = "0000:3a:00.0" if i == 0 else "0000:17:00.0"
    out += ['  <cpu numaid="%d" affinity="%08x" arch="x86_64" vendor="GenuineIntel">' % (i, 1 << i),
            '    <pci busid="%s" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">' % gpu,
            '      <gpu dev="%d" sm="90" rank="%d" gdr="1"><nvlink target="%s" count="18" tclass="0x030200"/></gpu>' % (i, i, other),
            '    </pci>',
            '    <pci busid="%s" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">' % nic,
            '      <nic><net name="mlx5_%d" dev="%d" speed="400000" port="1" latency="0" guid="0x%x" maxconn="131072" gdr="1"/></nic>' % (i, i, i + 1),
            '    </pci>',
            '  </cpu>']
out.append('</system>')
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
name="torch: torchrun under srun --gpu-topo, the launcher per worker, the plugin's topology= file: each worker its own GPU, CPUs and OpenMP threads, seen from inside"
port=$((30000 + $$ % 2000))
# As the user guide's recipe: torchrun inherits the plugin's whole-task OMP_PLACES/OMP_PROC_BIND
# (libgomp, loaded with torch, pins torchrun to the first place, and its workers inherit that)
# and srun's -c 2 (the node's two workers' to share): each worker's launcher binds it to its own
# share of the task's CPUs all the same (launcher/env/binding.hpp worker_view).
cat > "$w/tr.sh" <<EOS
exec $PY -m torch.distributed.run --nnodes 2 --nproc_per_node 2 \
    --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:$port --rdzv_id tr$$ --max_restarts 0 --redirects 1 --tee 1 \
    --no_python "$L" -- bash "$w/trview.sh"
EOS
cat > "$w/trview.sh" <<EOS
v=\$("$CLUSTER_BUILD/task-view" "$CLUSTER_DIR/dev/\$SLURMD_NODENAME")
echo "TRVIEW node=\$SLURMD_NODENAME lr=\$LOCAL_RANK cvd=\${CUDA_VISIBLE_DEVICES-unset} omp=\${OMP_NUM_THREADS-unset} \${v#VIEW }"
exec $PY $T
EOS
plugstack_set "topology=$w/topo/%n.xml"
if timeout 120 srun -N2 -w n1,n2 --ntasks-per-node=1 -c 2 --gpus-per-node=2 --gpu-topo=closest bash "$w/tr.sh" > "$w/tr" 2> "$w/tr.err"; then
    bad=$(check_ok "$w/tr" 4)
    views=$($PY - "$w/tr" <<'PY'
import sys
errs, seen = [], {}
for l in open(sys.argv[1]):
    if "TRVIEW " not in l:
        continue
    f = dict(kv.split("=", 1) for kv in l.split("TRVIEW ", 1)[1].split())
    opened = [d for d in f.get("open", "").split(",") if d]
    cvd = [d for d in f["cvd"].split(",") if d] if f["cvd"] != "unset" else []
    local = int(f["lr"])
    k = cvd[local] if local < len(cvd) else (cvd[0] if len(cvd) == 1 else "")
    if not k.isdigit() or int(k) >= len(opened):
        errs.append("%s worker %s: device %s of CUDA_VISIBLE_DEVICES=%s is none of the devices it opens (%s)"
                    % (f["node"], f["lr"], local, f["cvd"], ",".join(opened)))
        continue
    ncpus = sum(int(b) - int(a) + 1 for a, _, b in (r.partition("-") if "-" in r else (r, "", r) for r in f["cpus"].split(",")))
    if f["node"] == "n1" and f["omp"] != str(ncpus):  # n1: this host's topology, the binding applied
        errs.append("%s worker %s: OMP_NUM_THREADS=%s for its %s CPU(s) %s" % (f["node"], f["lr"], f["omp"], ncpus, f["cpus"]))
    seen.setdefault(f["node"], []).append((opened[int(k)], f["cpus"], f["lr"]))
for node, ws in sorted(seen.items()):
    if len(ws) != 2 or ws[0][0] == ws[1][0]:
        errs.append("%s: workers' GPUs %s" % (node, ws))
    if node == "n1" and sorted((w[0], w[1]) for w in ws) != [("nvidia0", "0"), ("nvidia1", "1")]:
        errs.append("n1: workers' GPU and CPUs %s (GPU 0 with CPU 0, GPU 1 with CPU 1 expected)" % [w[:2] for w in ws])
if sorted(seen) != ["n1", "n2"]:
    errs.append("views from %s, expected n1 and n2" % sorted(seen))
print("; ".join(errs))
PY
)
    bad="$bad; $views"; bad=${bad#; }; bad=${bad%; }
    [ -z "$bad" ] && tap_ok "$name" || tap_not_ok "$name" "$bad" "$(grep -h 'TRVIEW\|gputopo' "$w/tr" "$w/tr.err" | head -n 8)"
else
    tap_not_ok "$name" "failed: $(tail -n 8 "$w/tr.err")"
fi
plugstack_default

# 5. sbatch.
name="torch: sbatch with srun --gpu-topo=island python3 train.py"
j=$(with_timeout 30 sbatch --parsable -t 5 -N4 --ntasks-per-node=2 --gpus-per-task=1 -o "$w/sb.out" \
        --wrap "srun --gpus-per-task=1 --gpu-topo=island $PY $T")
if [ -n "$j" ] && wait_job_state "$j" COMPLETED 120; then
    bad=$(check_ok "$w/sb.out" 8)
    [ -z "$bad" ] && tap_ok "$name" || tap_not_ok "$name" "$bad"
else
    tap_not_ok "$name" "job $j: $(job_field "$j" JobState)" "$(tail -n 8 "$w/sb.out")"
fi

# 6. Island order, interleaved leaves.
name="torch: --gpu-topo=island with islands n1,n3 | n2,n4: ranks follow islands, GROUP_RANK too"
printf 'Island=rackA Nodes=n[1,3]\nIsland=rackB Nodes=n[2,4]\n' > "$CLUSTER_DIR/etc/gputopo-torch.conf"
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml islands=$CLUSTER_DIR/etc/gputopo-torch.conf"
if timeout 120 srun -N4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=island $PY "$T" > "$w/is" 2> "$w/is.err"; then
    bad=$(check_ok "$w/is" 8)
    order=$(grep -o 'TORCHOK .*' "$w/is" | sed 's/.*rank=\([0-9]*\).* node=\([a-z0-9]*\).*/\1 \2/' | sort -n | awk '{printf "%s ", $2}')
    [ "$order" = "n1 n1 n3 n3 n2 n2 n4 n4 " ] || bad="$bad; rank order by node: $order"
    [ -z "${bad#; }" ] && tap_ok "$name" || tap_not_ok "$name" "${bad#; }" "$(tail -n 5 "$w/is.err")"
else
    tap_not_ok "$name" "failed: $(tail -n 8 "$w/is.err")"
fi

name="torch: --gpu-topo=island,tp=2,pp=2,order=tp-cp-ep-pp-dp: torch's ranks are the layout placement's"
lay=tp=2,pp=2,order=tp-cp-ep-pp-dp
if timeout 120 srun -N4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=island,$lay $PY "$T" > "$w/ly" 2> "$w/ly.err" &&
   "$CLUSTER_BUILD/gputopo" ranks --nodes 'n[1-4]' --tasks-per-node '2(x4)' --islands "$CLUSTER_DIR/etc/gputopo-torch.conf" \
        --layout $lay --format json > "$w/ly.json" 2>> "$w/ly.err"; then
    bad=$(check_ok "$w/ly" 8)
    order=$(grep -o 'TORCHOK .*' "$w/ly" | sed 's/.*rank=\([0-9]*\).* node=\([a-z0-9]*\).*/\1 \2/' | sort -n | awk '{printf "%s ", $2}')
    want=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); m={r:n["node"] for n in d["nodes"] for r in n["ranks"]}; print(" ".join(m[r] for r in sorted(m)) + " ")' "$w/ly.json")
    [ "$order" = "$want" ] || bad="$bad; rank order by node: $order, the placement's: $want"
    [ -z "${bad#; }" ] && tap_ok "$name" || tap_not_ok "$name" "${bad#; }" "$(tail -n 5 "$w/ly.err")"
else
    tap_not_ok "$name" "failed: $(tail -n 8 "$w/ly.err")"
fi
plugstack_default

# 7-11. Failures under sbatch --requeue with the launcher per rank.
release_until_done() {
    local job=$1 i st
    for i in $(seq 1 600); do
        st=$(job_field "$job" JobState)
        case "$st" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|"") return 0 ;; esac
        if [ "$st" = PENDING ] && [ "$(job_field "$job" Reason)" = BeginTime ]; then
            scontrol update JobId="$job" StartTime=now >/dev/null 2>&1
        fi
        sleep 0.2
    done
    return 1
}
fail_job() {  # HOW: submits, prints the job id
    cat > "$w/f-$1.sh" <<EOS
#!/bin/bash
[ "\${SLURM_RESTART_COUNT:-0}" = 0 ] && export FAIL=$1 FAIL_RANK=1
srun --gpus-per-task=1 "$L" --topology "$CLUSTER_DIR/topo/%n.xml" --peer-wait 8 -- $PY $T
EOS
    # xid and kill are requeued with the failing node kept out: no -w there.
    local nodes="-w n2,n3"
    case $1 in xid|kill) nodes="" ;; esac
    with_timeout 30 sbatch --parsable --requeue -t 5 -N2 $nodes --ntasks-per-node=2 --gpus-per-task=1 -o "$w/f-$1-%j.out" "$w/f-$1.sh"
}
declare -A J
for how in exception exit3 oom xid kill; do J[$how]=$(fail_job $how); done
for how in exception exit3 oom xid kill; do release_until_done "${J[$how]}"; done
for how in exception exit3 oom; do
    j=${J[$how]}
    name="torch: one rank's $how -> no requeue, the peers defer to the root cause"
    r=$(job_field "$j" Restarts)
    out=$(cat "$w"/f-$how-$j.out 2>/dev/null)
    if [ "$r" = 0 ] && echo "$out" | grep -q "root cause decides: failed" && ! echo "$out" | grep -q "requeueing"; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "job $j: restarts=$r state=$(job_field "$j" JobState)" "$(echo "$out" | grep gputopo | tail -n 8)"
    fi
done
for how in xid kill; do
    j=${J[$how]}
    name="torch: one rank's $how -> one requeue, then the job succeeds"
    r=$(job_field "$j" Restarts)
    st=$(job_field "$j" JobState)
    out=$(cat "$w"/f-$how-$j.out 2>/dev/null)
    if [ "$r" = 1 ] && [ "$st" = COMPLETED ] && [ "$(echo "$out" | grep -c TORCHOK)" = 4 ]; then
        tap_ok "$name"
    else
        tap_not_ok "$name" "job $j: restarts=$r state=$st" "$(echo "$out" | grep gputopo | tail -n 8)"
    fi
done

# 12. A taken MASTER_PORT is named before the program starts.
name="torch: a MASTER_PORT already in use is named, with the variable to set"
$PY -c 'import socket,sys,time
s=socket.socket(); s.bind(("0.0.0.0",0)); s.listen(1); print(s.getsockname()[1], flush=True); time.sleep(60)' > "$w/port" &
lp=$!
wait_lines "$w/port" 1 10
busy=$(head -n 1 "$w/port")
MASTER_PORT=$busy timeout 60 srun -N1 -n1 --gpu-topo=closest true > "$w/busy" 2> "$w/busy.err"
kill $lp 2>/dev/null
if grep -q "MASTER_PORT=$busy is already in use" "$w/busy.err"; then
    tap_ok "$name"
else
    tap_not_ok "$name" "port $busy" "$(cat "$w/busy.err")"
fi
