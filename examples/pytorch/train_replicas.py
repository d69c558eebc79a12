"""Training under `gputopo run` with checkpoint replicas on a peer node.

    srun/gputopo run ... python3 train_replicas.py --shared DIR --local PATTERN [options]

Every --save-every steps each rank writes its checkpoint shard (model,
optimizer, and a per-rank state tensor standing for a ZeRO/FSDP shard) to
node-local storage (--local, %n = the node, e.g. /local/$SLURM_JOB_ID/%n or
$TMPDIR), then sends a copy to the rank `gputopo run` named as its replica peer
(a node in another failure domain: gputopo_run.replica_peer_rank()) and keeps
the copy it receives (gputopo_run.replica_keeps_rank()). Every --persist-every
checkpoints the shards also go to the shared directory (--shared), the durable
tier. Rank 0 reports each checkpoint (gputopo_run.report_checkpoint).

On a restart, each rank restores the reported step:
  - a node that replaced a failed one (gputopo_run.restore_source()) receives
    its shard from the peer that kept it (the peer sends it:
    gputopo_run.restore_targets());
  - the other ranks read their own shard from node-local storage;
  - only when some rank cannot (its replica was lost too, or a requeue landed
    on new nodes) do all ranks read the newest durable checkpoint from the
    shared directory.
The copies travel over torch.distributed (a gloo group: host memory, what NVRx's
local checkpointing does with its CliqueReplicationStrategy), not through a
file system: a node's local NVMe is not reachable from another node on most
clusters, while the training network is, and at 100+ GB/s per node.

Options for tests and benchmarks:
  --state-mb M          size of each rank's shard (default 1)
  --restore shared      always restore from the shared directory (the baseline)
  --shared-read-mbps R  read the shared directory at R MB/s per rank (emulates a
                        parallel file system shared by every rank at once)
  --record DIR          append what happened to DIR/replicas.log: "ckpt", "restore"
                        (step, source, checksum, seconds, shared_opens), "step1"
                        (the first step completed after a start, unix time)
  --pace S              seconds to sleep per step

NCCL on GPUs (the model on cuda:LOCAL_RANK), gloo on CPU otherwise.
"""
import argparse
import datetime
import hashlib
import io
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import gputopo_run

p = argparse.ArgumentParser()
p.add_argument("--shared", required=True)
p.add_argument("--local", required=True)
p.add_argument("--steps", type=int, default=100)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--persist-every", type=int, default=1)
p.add_argument("--state-mb", type=float, default=1.0)
p.add_argument("--restore", choices=("auto", "shared"), default="auto")
p.add_argument("--shared-read-mbps", type=float, default=0.0)
p.add_argument("--record", default="")
p.add_argument("--pace", type=float, default=0.0)
args = p.parse_args()

node = os.environ.get("SLURMD_NODENAME", "local")
shared = os.path.abspath(args.shared)
local = os.path.abspath(args.local.replace("%n", node))
rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
attempt = gputopo_run.restart_count()

# Every open under the shared directory, attempted or done (Python's audit hook:
# torch.load/save of a path opens through it): the restore record says how many.
shared_opens = []
if hasattr(sys, "addaudithook"):
    sys.addaudithook(lambda event, a: event == "open" and isinstance(a[0], str) and
                     os.path.abspath(a[0]).startswith(shared + os.sep) and shared_opens.append(a[0]))


def record(line):
    if args.record:
        with open(os.path.join(args.record, "replicas.log"), "a") as f:
            f.write("%s attempt=%d rank=%d node=%s\n" % (line, attempt, rank, node))


os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("USE_LIBUV", "0")  # torch 2.4+'s TCPStore defaults to libuv, which Debian's build lacks
os.environ.setdefault("MASTER_PORT", str(20000 + (int(os.environ.get("SLURM_JOB_ID", "0")) * 7 + attempt * 131) % 20000))
cuda = torch.cuda.is_available()
device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)
dist.init_process_group("nccl" if cuda else "gloo", init_method="env://", rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=300))
# Replicas travel in host memory over gloo, beside NCCL's training traffic.
repl = dist.new_group(backend="gloo") if cuda else dist.group.WORLD

torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
g0 = torch.Generator().manual_seed(1000 + rank)
shard = torch.rand(max(1, int(args.state_mb * (1 << 20) / 4)), generator=g0)  # this rank's own state


def state_bytes(step):
    buf = io.BytesIO()
    torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict(), "shard": shard}, buf)
    return buf.getvalue()


def checksum(step):
    h = hashlib.sha256(str(step).encode())
    for t in list(model.module.state_dict().values()) + [shard]:
        h.update(t.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def load(data):
    global shard
    s = torch.load(io.BytesIO(data))
    model.module.load_state_dict(s["model"])
    opt.load_state_dict(s["opt"])
    shard = s["shard"]
    return s["step"]


def write_atomic(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def read_file(path, mbps=0.0):
    """The file's bytes; at most `mbps` MB/s when given (the emulated shared file system)."""
    out, t0 = bytearray(), time.monotonic()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            out += chunk
            if mbps > 0:
                ahead = len(out) / (mbps * 1e6) - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
    return bytes(out)


def own_path(step):
    return os.path.join(local, "own.rank%d.step%d.pt" % (rank, step))


def kept_path(of_rank, step):
    return os.path.join(local, "replica.rank%d.step%d.pt" % (of_rank, step))


def exchange(send_to, data, recv_from):
    """Sends `data` to rank `send_to` (None: nothing) while receiving from rank
    `recv_from` (None: nothing); returns what was received."""
    sends = []
    if send_to is not None:
        sends.append(dist.isend(torch.tensor([len(data)], dtype=torch.int64), send_to, group=repl))
        if data:
            sends.append(dist.isend(torch.frombuffer(bytearray(data), dtype=torch.uint8), send_to, group=repl))
    got = None
    if recv_from is not None:
        n = torch.zeros(1, dtype=torch.int64)
        dist.recv(n, recv_from, group=repl)
        got = b""
        if n.item() > 0:
            buf = torch.empty(int(n.item()), dtype=torch.uint8)
            dist.recv(buf, recv_from, group=repl)
            got = buf.numpy().tobytes()
    for s in sends:
        s.wait()
    return got


def prune(keep):
    """Removes the local copies of steps other than `keep` (the step just saved
    and the one reported before it, which a failure before the new report restores)."""
    for name in os.listdir(local):
        if ".step" in name and not any(name.endswith(".step%d.pt" % k) for k in keep):
            try:
                os.unlink(os.path.join(local, name))
            except OSError:
                pass


def checkpoint(step):
    data = state_bytes(step)
    write_atomic(own_path(step), data)
    peer, keeps = gputopo_run.replica_peer_rank(), gputopo_run.replica_keeps_rank()
    got = exchange(peer, data, keeps)
    if got is not None:
        write_atomic(kept_path(keeps, step), got)
    if (step // args.save_every) % args.persist_every == 0:
        try:
            write_atomic(os.path.join(shared, "step-%d" % step, "rank%d.pt" % rank), data)
        except OSError as err:
            sys.stderr.write("train_replicas: durable copy of step %d failed: %s (the local and peer copies stand)\n"
                             % (step, err))
    dist.barrier()  # every rank's shard is local and at its peer: the checkpoint counts
    prune((step, step - args.save_every))
    record("ckpt step=%d sha=%s" % (step, checksum(step)))
    if rank == 0:
        gputopo_run.report_checkpoint("step-%d" % step)


def newest_durable():
    steps = []
    for name in os.listdir(shared):
        if name.startswith("step-") and name[5:].isdigit():
            if len([f for f in os.listdir(os.path.join(shared, name)) if f.endswith(".pt")]) == world:
                steps.append(int(name[5:]))
    return max(steps) if steps else 0


def restore():
    """Restores the reported step (0: a fresh start); returns (step, source)."""
    reported = gputopo_run.last_checkpoint()
    if not reported:
        return 0, "none"
    step = int(reported.rsplit("-", 1)[1])
    data, source = None, "shared"
    if args.restore == "auto":
        src, targets = gputopo_run.restore_source(), gputopo_run.restore_targets()
        # The peers send first what they keep for a replaced node (one exchange each way).
        sent = None
        for t in targets:
            try:
                sent = read_file(kept_path(t, step))
            except OSError:
                sent = b""  # lost here too: the receiver falls back
            exchange(t, sent, None)
        if src is not None:
            data = exchange(None, b"", src["rank"]) or None
            source = "peer:%s" % src["node"]
        else:
            try:
                data, source = read_file(own_path(step)), "local"
            except OSError:
                data = None
    ok = torch.tensor([1 if data else 0])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if not ok.item():  # some rank has no copy: every rank takes the newest durable one
        step = newest_durable()
        if step == 0:
            return 0, "none"
        data = read_file(os.path.join(shared, "step-%d" % step, "rank%d.pt" % rank), args.shared_read_mbps)
        source = "shared"
    return load(data), source


t0 = time.time()
start, source = restore()
restore_s = time.time() - t0
if start:
    record("restore step=%d sha=%s source=%s seconds=%.3f shared_opens=%d" % (
        start, checksum(start), source, restore_s, len(shared_opens)))
os.makedirs(local, exist_ok=True)

first = True
for step in range(start + 1, args.steps + 1):
    g = torch.Generator().manual_seed(step * 1000 + rank)
    x = torch.randn(16, 8, generator=g).to(device)
    y = x.sum(dim=1, keepdim=True)
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    shard.mul_(0.5).add_(float(loss.item()))  # the rank's own state moves with training
    gputopo_run.heartbeat(step)
    if first:
        first = False
        record("step1 step=%d unix=%.3f restore_s=%.3f source=%s pid=%d" % (step, time.time(), restore_s, source, os.getpid()))
    if step % args.save_every == 0:
        checkpoint(step)
    time.sleep(args.pace)

if rank == 0:
    record("done step=%d sha=%s" % (args.steps, checksum(args.steps)))
dist.destroy_process_group()
