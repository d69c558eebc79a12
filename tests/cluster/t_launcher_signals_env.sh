#!/usr/bin/env bash
# gputopo-launch on the local cluster: signals and the environment per rank.
#  - scancel --signal=USR1 / TERM reach the program and its child (the
#    program runs in its own process group; the launcher forwards);
#  - RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
#    for -N2 -n3 (2 + 1 tasks);
#  - without the plugin, the launcher's binding equals the plugin's for the
#    same step (n3, XE8640 topology), and on n1 (this host's CPUs) the program
#    really runs on the planned CPUs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 4
cluster_ensure "${1:-build}" || { echo "not ok - launcher signals/env: cluster"; exit 1; }
L=$CLUSTER_BUILD/gputopo-launch
w=$CLUSTER_DIR/tmp/launcher-env.$$
mkdir -p "$w"

# 1. Signals reach the program and its child.
cat > "$w/sig.sh" <<EOS
#!/bin/bash
srun -o $w/sig-%t.out $L -- bash -c '
  trap "echo prog-USR1 >> $w/sig" USR1; trap "echo prog-TERM >> $w/sig; wait; exit 0" TERM
  bash -c "trap \"echo child-USR1 >> $w/sig\" USR1; trap \"echo child-TERM >> $w/sig; exit 0\" TERM; echo child >> $w/ready; while :; do sleep 0.1; done" &
  echo prog >> $w/ready
  while :; do sleep 0.1; done'
EOS
# Each step waits for the event it needs (traps in place, signal seen), never a fixed sleep.
j=$(with_timeout 30 sbatch --parsable -t 2 -N1 -n1 -o "$w/sig-batch.out" "$w/sig.sh")
wait_lines "$w/ready" 2 60
scancel --signal=USR1 "$j"
wait_lines "$w/sig" 2 20
scancel --signal=TERM "$j"
wait_job_state "$j" COMPLETED 20 >/dev/null
got=$(sort "$w/sig" 2>/dev/null | tr '\n' ' ')
if [ "$got" = "child-TERM child-USR1 prog-TERM prog-USR1 " ]; then
    tap_ok "launcher: SIGUSR1 and SIGTERM reach the program and its child"
else
    tap_not_ok "launcher: SIGUSR1 and SIGTERM reach the program and its child" "got: $got" "$(cat "$w"/sig-*.out)"
fi
scancel "$j" 2>/dev/null

# 2. Framework variables, 2 tasks on n1 and 1 on n2.
if with_timeout 60 srun -w n[1-2] -N2 -n3 --distribution=block -l $L -- bash -c \
     'echo "$SLURMD_NODENAME RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"' \
     > "$w/fw" 2>&1; then
    # MASTER_ADDR: the first node's name, or its NodeAddr where the name does not resolve.
    ma=n1
    getent hosts n1 >/dev/null 2>&1 || ma=$(scontrol show node -o n1 | grep -o ' NodeAddr=[^ ]*' | cut -d= -f2)
    want="n1 RANK=0 LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=2 MASTER_ADDR=$ma
n1 RANK=1 LOCAL_RANK=1 WORLD_SIZE=3 LOCAL_WORLD_SIZE=2 MASTER_ADDR=$ma
n2 RANK=2 LOCAL_RANK=0 WORLD_SIZE=3 LOCAL_WORLD_SIZE=1 MASTER_ADDR=$ma"
    have=$(sed 's/^[0-9]*: //' "$w/fw" | sed 's/ MASTER_PORT=.*//' | sort)
    ports=$(grep -o 'MASTER_PORT=[0-9]*' "$w/fw" | sort -u)
    port=${ports#MASTER_PORT=}
    if [ "$have" = "$want" ] && [ "$(echo "$ports" | wc -l)" = 1 ] && [ "$port" -ge 20000 ] && [ "$port" -le 29999 ]; then
        tap_ok "launcher: RANK/LOCAL_RANK/WORLD_SIZE/LOCAL_WORLD_SIZE/MASTER_ADDR per rank, one MASTER_PORT ($port) for the step"
    else
        tap_not_ok "launcher: framework variables per rank" "$(cat "$w/fw")"
    fi
else
    tap_not_ok "launcher: framework variables per rank" "srun failed: $(tail -3 "$w/fw")"
fi

# 3. Binding without the plugin = the plugin's binding (n3, 4 tasks sharing 4 GPUs).
vars='GPUTOPO_MODE GPUTOPO_GPUS GPUTOPO_CPUS GPUTOPO_MEMS GPUTOPO_NIC CUDA_VISIBLE_DEVICES NCCL_IB_HCA UCX_NET_DEVICES'
dump="for v in $vars; do printf '%s=%s ' \$v \"\${!v}\"; done; echo"
with_timeout 60 srun -w n3 -N1 -n4 --gpus-per-node=4 --gpu-topo=closest -l bash -c "$dump" 2>/dev/null | sort > "$w/plugin"
plugstack_set_line ""
with_timeout 60 srun -w n3 -N1 -n4 --gpus-per-node=4 -l $L --gpu-topo closest --topology "$CLUSTER_DIR/topo/%n.xml" -- bash -c "$dump" 2>/dev/null | sort > "$w/launcher"
if [ -s "$w/plugin" ] && grep -q 'GPUTOPO_GPUS=[0-9]' "$w/plugin" && cmp -s "$w/plugin" "$w/launcher"; then
    tap_ok "launcher: without the plugin, every rank's binding equals the plugin's (n3, 4 tasks, closest)"
else
    tap_not_ok "launcher: without the plugin, every rank's binding equals the plugin's" "plugin:" "$(cat "$w/plugin")" "launcher:" "$(cat "$w/launcher")"
fi

# 4. Real affinity on n1 (this host's CPUs), no plugin.
with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-node=2 -l $L --gpu-topo closest --topology "$CLUSTER_DIR/topo/%n.xml" -- \
    bash -c 'echo "GPUTOPO_CPUS=$GPUTOPO_CPUS $(grep Cpus_allowed_list /proc/self/status | tr -d "\t")"' > "$w/aff" 2>&1
plugstack_default
ok=1
[ "$(grep -c 'GPUTOPO_CPUS=[0-9]' "$w/aff")" = 2 ] || ok=0
while read -r _ planned allowed; do
    [ "${planned#GPUTOPO_CPUS=}" = "${allowed#Cpus_allowed_list:}" ] || ok=0
done < "$w/aff"
if [ "$ok" = 1 ]; then
    tap_ok "launcher: without the plugin, the program runs on its planned CPUs (n1, real affinity)"
else
    tap_not_ok "launcher: without the plugin, the program runs on its planned CPUs (n1)" "$(cat "$w/aff")"
fi
exit 0
