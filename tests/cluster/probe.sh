#!/bin/bash
# Run as the task of an srun: prints one line "PROBE KEY=VALUE ..." with what
# the task got (the variables gputopo sets or reads) and the kernel's view of
# its affinity. Read by check_binding.py. Bash, not python: 32 tasks start fast.
# srun forwards a task's output in pieces of 1 KiB (Slurm's I/O message size): a longer line can
# be cut and interleaved with another task's, so the line keeps to what the checks read.
line=PROBE
for v in $(compgen -e GPUTOPO_ | grep -vE '^GPUTOPO_(CLI|FAKE_NVML|CLUSTER_.*|FRAMEWORK_SET)$') CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER ROCR_VISIBLE_DEVICES NCCL_IB_HCA \
         UCX_NET_DEVICES SLURMD_NODENAME SLURM_LOCALID SLURM_PROCID SLURM_STEP_GPUS SLURM_JOB_GPUS SLURM_JOB_ID \
         SLURMD_TRES_BIND; do
    [ -n "${!v+x}" ] && line+=" $v=${!v}"
done
# Per-task GPU binding (SLURMD_TRES_BIND): under ConstrainDevices the task's variables count
# its GPUs 0..k-1; Slurm's record of the job's GPUs per node says which they are.
if [ "${SLURM_LOCALID:-}" = 0 ] && [ -n "${SLURMD_TRES_BIND:-}" ]; then
    line+=" JOB_GPU_IDX=$(scontrol show job -d "$SLURM_JOB_ID" 2>/dev/null |
        sed -n 's/.*Nodes=\([^ ]*\) .*IDX:\([0-9,-]*\).*/\1@\2/p' | tr '\n' '|')"
fi
while IFS=$':\t ' read -r key value; do
    case $key in Cpus_allowed_list|Mems_allowed_list) line+=" $key=$value" ;; esac
done < /proc/self/status
# What the task can really open (task-view): under ConstrainDevices its own variables
# count its GPUs 0..k-1.
if [ -x "${CLUSTER_BUILD:-}/task-view" ] && [ -d "${CLUSTER_DIR:-}/dev/${SLURMD_NODENAME:-}" ]; then
    view=$("$CLUSTER_BUILD/task-view" "$CLUSTER_DIR/dev/$SLURMD_NODENAME")
    view=${view#VIEW }
    line+=" ${view%% denied=*}"
fi
echo "$line"
