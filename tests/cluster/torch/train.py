"""A small real torch.distributed job for tests/cluster/t_torch.sh.

init_process_group("gloo", init_method="env://"), an all_reduce, one
DistributedDataParallel step (its gradient checked against the mean over
ranks), a barrier; then one line per rank read from torch itself:
  TORCHOK rank=R world=W local=L lws=N group=G node=NODE port=P gpu=GPU master=MASTER_ADDR
FAIL=<how> with FAIL_RANK=<rank> makes that rank fail after the all_reduce
(the others then lose their peer inside DDP's all_reduce):
  exception  RuntimeError        exit3  SystemExit(3)
  oom        torch.cuda.OutOfMemoryError (CUDA out of memory)
  xid        an NVRM Xid line on stderr, then exit 1
  kill       the rank's launcher (its parent) and itself killed (SIGKILL): as a node that dies
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, "all_reduce gave %s" % t.item()

fail, fail_rank = os.environ.get("FAIL", ""), int(os.environ.get("FAIL_RANK", "1"))
if fail and rank == fail_rank:
    if fail == "exception":
        raise RuntimeError("a bug in rank %d" % rank)
    if fail == "exit3":
        raise SystemExit(3)
    if fail == "oom":
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
    if fail == "xid":
        sys.stderr.write("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n")
        sys.stderr.flush()
        sys.exit(1)
    if fail == "kill":
        import signal
        os.kill(os.getppid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
model(torch.ones(2, 4) * (rank + 1)).sum().backward()
# d(sum)/dw = 2 (rank + 1) per element on each rank; DDP averages over ranks.
want = 2 * (world + 1) / 2
got = model.module.weight.grad[0][0].item()
assert abs(got - want) < 1e-5, "DDP gradient %s, expected %s" % (got, want)
dist.barrier()
# The GPU this process would use: position LOCAL_RANK of what it sees (torch.cuda.set_device(LOCAL_RANK)).
local = int(os.environ.get("LOCAL_RANK", "0"))
visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]
gpu = visible[local] if local < len(visible) else (visible[0] if len(visible) == 1 else "-")
print("TORCHOK rank=%d world=%d local=%s lws=%s group=%s node=%s port=%s gpu=%s master=%s" % (
    rank, world, os.environ.get("LOCAL_RANK"), os.environ.get("LOCAL_WORLD_SIZE"), os.environ.get("GROUP_RANK"),
    os.environ.get("SLURMD_NODENAME"), os.environ.get("MASTER_PORT"), gpu, os.environ.get("MASTER_ADDR")), flush=True)
dist.destroy_process_group()
