#!/bin/bash
# Run as the task of an srun: one line with what gputopo wrote beside what the task really
# has (task-view: the devices it can open, Cpus_allowed_list, get_mempolicy). Read by
# check_view.py. cpubind: SLURM_CPU_BIND as the task sees it (spaces would split the line:
# there are none in Slurm's value).
v=$("$CLUSTER_BUILD/task-view" "$CLUSTER_DIR/dev/$SLURMD_NODENAME")
echo "TASK local=$SLURM_LOCALID node=$SLURMD_NODENAME cvd=${CUDA_VISIBLE_DEVICES-unset} rocr=${ROCR_VISIBLE_DEVICES-unset} gpus=${GPUTOPO_GPUS-unset} cpubind=${SLURM_CPU_BIND-unset} ${v#VIEW }"
