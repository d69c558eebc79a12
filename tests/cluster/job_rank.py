"""One rank of t_job_spares.sh's program: a Python training loop under
`gputopo run` that beats through the shipped helper (python/gputopo_run.py).
Records when it started (rank, node, world size, restart count, checkpoint) in
DIR/start.RESTART and its pid in DIR/pid.RESTART.RANK, reports a checkpoint
(rank 0), beats every 0.2 s until DIR/stop-beating exists (it then goes on
running without beating: a hang), and exits 0 when DIR/finish appears."""
import os
import sys
import time

import gputopo_run

d = sys.argv[1]
r = gputopo_run.rank()
a = gputopo_run.restart_count()


def record(name, line):
    with open(os.path.join(d, name), "a") as f:
        f.write("%.6f %s\n" % (time.time(), line))


record("start.%d" % a, "rank=%d node=%s world=%s restart=%d ckpt=%s pid=%d" % (
    r, os.environ.get("SLURMD_NODENAME"), os.environ.get("SLURM_NTASKS"), a,
    gputopo_run.last_checkpoint(), os.getpid()))
with open(os.path.join(d, "pid.%d.%d" % (a, r)), "w") as f:
    f.write("%d\n" % os.getpid())
if r == 0:
    gputopo_run.report_checkpoint("ckpt-after-restart-%d" % a)
first = True
while not os.path.exists(os.path.join(d, "finish")):
    if not os.path.exists(os.path.join(d, "stop-beating")) and gputopo_run.heartbeat(min_interval=0.2) and first:
        record("beat.%d" % a, "rank=%d" % r)
        first = False
    time.sleep(0.05)
