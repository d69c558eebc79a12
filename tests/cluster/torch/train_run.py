"""A real training program under `gputopo run` for tests/cluster/t_job_torch.sh.

    train_run.py DIR STEPS SAVE_EVERY

DistributedDataParallel over gloo (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT as
the plugin, gputopo run or srun give them; SLURM_PROCID, SLURM_NTASKS and
127.0.0.1 otherwise), a small linear model trained on batches derived from the
step number (so a resumed run trains exactly what an uninterrupted one would),
a checkpoint every SAVE_EVERY steps by rank 0 (torch.save into DIR/ckpt,
reported with gputopo_run.report_checkpoint), gputopo_run.heartbeat(step) from
the training loop only. It resumes from gputopo_run.last_checkpoint().
The part of each step that waits for no other rank (TRAIN_WORK 128x128 matrix
products, a stand-in for the model's compute, then the forward pass and the
loss) runs inside gputopo_run.busy(), as `gputopo run --slow-nodes` needs it.

Records (DIR is shared): DIR/start.A (one line per rank of attempt A: rank,
SLURM_PROCID, node, world, checkpoint resumed from, pid), DIR/pid.A.RANK,
DIR/steps.A (rank 0: "step=S" per trained step), DIR/done (rank 0 at the end:
the final weights' checksum).
Faults, read from DIR/fault.A (A the attempt, GPUTOPO_RESTART_COUNT):
  bug R S    rank R raises ZeroDivisionError at step S (a user bug); S "+N": N
             steps after the step the attempt started from
  hang R S   rank R sleeps for an hour at the start of step S (a hang in its own
             code; the others wait for it in backward's allreduce)
"""
import datetime
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import gputopo_run

d, total, save_every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pace = float(os.environ.get("TRAIN_PACE", "0.1"))
work = int(os.environ.get("TRAIN_WORK", "0"))
rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
attempt = gputopo_run.restart_count()
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("USE_LIBUV", "0")  # torch 2.4+'s TCPStore defaults to libuv, which Debian's build lacks
# TRAIN_PORT_BASE (a test's own, random): base + attempt; else from the job id (which two clusters on one host share).
port_base = os.environ.get("TRAIN_PORT_BASE")
os.environ.setdefault("MASTER_PORT", str(int(port_base) + attempt) if port_base else
                      str(20000 + (int(os.environ.get("SLURM_JOB_ID", "0")) * 7 + attempt * 131) % 20000))


def append(name, line):
    with open(os.path.join(d, name), "a") as f:
        f.write(line + "\n")


fault = []
try:
    with open(os.path.join(d, "fault.%d" % attempt)) as f:
        fault = f.read().split()
except OSError:
    pass

dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "300"))))
if work:
    torch.set_num_threads(1)  # the rank's compute on one core, as one GPU's
ballast = torch.randn(128, 128, generator=torch.Generator().manual_seed(1))
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
start = 0
resumed = gputopo_run.last_checkpoint()
if resumed:
    state = torch.load(resumed)
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"]
append("start.%d" % attempt, "rank=%d procid=%s node=%s world=%d ckpt=%s start=%d pid=%d" % (
    rank, os.environ.get("SLURM_PROCID"), os.environ.get("SLURMD_NODENAME"), world, resumed or "none", start, os.getpid()))
append("pid.%d.%d" % (attempt, rank), str(os.getpid()))

fault_step = (start + int(fault[2][1:]) if fault[2].startswith("+") else int(fault[2])) if fault else -1
for step in range(start + 1, total + 1):
    if fault and int(fault[1]) == rank and fault_step == step:
        if fault[0] == "bug":
            loss_scale = 1 / (step - step)  # ZeroDivisionError: division by zero
        if fault[0] == "hang":
            time.sleep(3600)
    with gputopo_run.busy():  # this rank's own work: no other rank waited for here
        for _ in range(work):
            ballast @ ballast
        g = torch.Generator().manual_seed(step * 1000 + rank)
        x = torch.randn(16, 8, generator=g)
        y = x.sum(dim=1, keepdim=True)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
    loss.backward()  # DDP's allreduce: every rank waits here for the others
    opt.step()
    if rank == 0:
        append("steps.%d" % attempt, "step=%d" % step)
    gputopo_run.heartbeat(step)
    if step % save_every == 0 and rank == 0:
        os.makedirs(os.path.join(d, "ckpt"), exist_ok=True)
        path = os.path.join(d, "ckpt", "step-%d.pt" % step)
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path + ".tmp")
        os.replace(path + ".tmp", path)
        gputopo_run.report_checkpoint(path)
    time.sleep(pace)

if rank == 0:
    weights = b"".join(p.detach().numpy().tobytes() for p in model.module.parameters())
    append("done", "steps=%d sha=%s" % (total, hashlib.sha256(weights).hexdigest()[:16]))
dist.destroy_process_group()
