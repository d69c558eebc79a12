#!/bin/bash
# One rank of t_job_restart.sh's program: what a training script does under
# `gputopo run`. Records when it started (and where, with which restart count
# and checkpoint), reports a checkpoint (rank 0), touches its heartbeat every
# 0.2 s (the first beat's time recorded), and ends with exit 0 when DIR/finish
# appears, or with 78 (a user error) on rank 1 when DIR/user-error exists.
d=$1
r=$SLURM_PROCID
a=${GPUTOPO_RESTART_COUNT:-x}
now() { date +%s.%N; }
echo "$(now) rank=$r node=$SLURMD_NODENAME restart=$a ckpt=${GPUTOPO_LAST_CHECKPOINT:-none} pid=$$" >> "$d/start.$a"
echo $$ > "$d/pid.$a.$r"
[ "$r" = 0 ] && echo "ckpt-after-restart-$a" > "$GPUTOPO_CHECKPOINT_REPORT"
[ "$r" = 1 ] && [ -e "$d/user-error" ] && { echo "rank 1: bad configuration" >&2; exit 78; }
hb=${GPUTOPO_HEARTBEAT//%r/$r}
first=1
while [ ! -e "$d/finish" ]; do
    touch "$hb"
    [ $first = 1 ] && { echo "$(now) rank=$r" >> "$d/beat.$a"; first=0; }
    sleep 0.2
done
exit 0
