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
                        (step, source, checksum, seconds: the whole restore, fetch_s:
                        getting the bytes, shared_opens), "step1"
                        (the first step completed after a start, unix time)
  --pace S              seconds to sleep per step

NCCL on GPUs (the model on cuda:LOCAL_RANK), gloo on CPU otherwise.
"""
import argparse
import datetime
import hashlib
import io
import mmap
import os
import struct
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


# A checkpoint is one buffer (a uint8 tensor): a 16-byte header (the sizes), the small
# state pickled by torch.save (step, model, optimizer), then the shard's raw bytes,
# 64-byte aligned. The big part is never pickled: it is written, sent, received and
# read with one copy each, and restored as a view of the buffer.
_ALIGN = 64


def state_blob(step):
    buf = io.BytesIO()
    torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()}, buf)
    meta = buf.getvalue()
    off = 16 + (len(meta) + _ALIGN - 1) // _ALIGN * _ALIGN
    out = torch.zeros(off + shard.numel() * 4, dtype=torch.uint8)
    out[:16] = torch.frombuffer(bytearray(struct.pack("<QQ", len(meta), shard.numel())), dtype=torch.uint8)
    out[16:16 + len(meta)] = torch.frombuffer(bytearray(meta), dtype=torch.uint8)
    out[off:].view(torch.float32).copy_(shard)
    return out


def load(blob):
    global shard
    meta_len, numel = struct.unpack("<QQ", blob[:16].numpy().tobytes())
    s = torch.load(io.BytesIO(blob[16:16 + meta_len].numpy().tobytes()))
    off = 16 + (meta_len + _ALIGN - 1) // _ALIGN * _ALIGN
    model.module.load_state_dict(s["model"])
    opt.load_state_dict(s["opt"])
    shard = blob[off:off + numel * 4].view(torch.float32)
    return s["step"]


def checksum(step):
    h = hashlib.sha256(str(step).encode())
    for t in list(model.module.state_dict().values()) + [shard]:
        h.update(memoryview(t.detach().cpu().contiguous().numpy()).cast("B"))
    return h.hexdigest()[:16]


def write_atomic(path, blob):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(memoryview(blob.numpy()))
    os.replace(path + ".tmp", path)


def host_buffer(nbytes):
    """An uninitialised uint8 tensor of `nbytes` in anonymous memory the kernel may back
    with 2 MiB pages (MADV_HUGEPAGE where Python and the kernel have it): a restored shard
    lands in memory the process never touched, and faulting it in 4 KiB pages costs more
    than the copy itself on many hosts (here: 0.19 s for 64 MB in 4 KiB pages, 0.09 s in
    2 MiB pages, 0.003 s to refill it). Both restore paths, peer and shared, use it."""
    m = mmap.mmap(-1, max(1, nbytes), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(m, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            m.madvise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass
    return torch.frombuffer(m, dtype=torch.uint8)[:nbytes]


def read_file(path, mbps=0.0):
    """The file as a uint8 tensor; at most `mbps` MB/s when given (the emulated
    shared file system: a reader paced to that rate, 1 MiB at a time)."""
    t0 = time.monotonic()
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        out = host_buffer(size)
        view, pos = memoryview(out.numpy()), 0
        while pos < size:
            n = f.readinto(view[pos:pos + (1 << 20)])
            if not n:
                raise OSError("%s: short read" % path)
            pos += n
            if mbps > 0:
                ahead = pos / (mbps * 1e6) - (time.monotonic() - t0)
                if ahead > 0:
                    time.sleep(ahead)
    return out


def map_file(path):
    """The file as a uint8 tensor over a private mapping: sent from the page cache
    without a copy into the process first."""
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    return torch.frombuffer(m, dtype=torch.uint8)


def own_path(step):
    return os.path.join(local, "own.rank%d.step%d.pt" % (rank, step))


def kept_path(of_rank, step):
    return os.path.join(local, "replica.rank%d.step%d.pt" % (of_rank, step))


def post_send(send_to, blob):
    """Starts sending `blob` (a uint8 tensor; None: an empty one) to rank `send_to`;
    returns the sends to wait for (the blob must live until they are done)."""
    n = 0 if blob is None else blob.numel()
    sends = [dist.isend(torch.tensor([n], dtype=torch.int64), send_to, group=repl)]
    if n:
        sends.append(dist.isend(blob, send_to, group=repl))
    return sends


def receive(recv_from):
    """What rank `recv_from` sends (None when it sends an empty one)."""
    n = torch.zeros(1, dtype=torch.int64)
    dist.recv(n, recv_from, group=repl)
    if n.item() == 0:
        return None
    got = host_buffer(int(n.item()))
    dist.recv(got, recv_from, group=repl)
    return got


def exchange(send_to, blob, recv_from):
    """Sends `blob` to rank `send_to` (None: nothing) while receiving from rank
    `recv_from` (None: nothing); returns what was received (None when nothing or an
    empty one came)."""
    sends = post_send(send_to, blob) if send_to is not None else []
    got = receive(recv_from) if recv_from is not None else None
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
    data = state_blob(step)
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
        t = time.time()
        # The peers start sending what they keep for a replaced node, and read their own
        # shard meanwhile.
        sends, kept = [], []
        for target in targets:
            try:
                kept.append(map_file(kept_path(target, step)))
            except (OSError, ValueError):
                kept.append(None)  # lost here too: the receiver falls back
            sends += post_send(target, kept[-1])
        if src is not None:
            data = receive(src["rank"])
            source = "peer:%s" % src["node"]
        else:
            try:
                data, source = read_file(own_path(step)), "local"
            except OSError:
                data = None
        for s in sends:
            s.wait()
        fetch_s[0] = time.time() - t
    ok = torch.tensor([0 if data is None else 1])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if not ok.item():  # some rank has no copy: every rank takes the newest durable one
        step = newest_durable()
        if step == 0:
            return 0, "none"
        t = time.time()
        data = read_file(os.path.join(shared, "step-%d" % step, "rank%d.pt" % rank), args.shared_read_mbps)
        fetch_s[0] = time.time() - t
        source = "shared"
    return load(data), source


fetch_s = [0.0]  # getting this rank's bytes (from the peer, local storage or the shared directory)
t0 = time.time()
start, source = restore()
restore_s = time.time() - t0
if start:
    record("restore step=%d sha=%s source=%s seconds=%.3f fetch_s=%.3f shared_opens=%d" % (
        start, checksum(start), source, restore_s, fetch_s[0], len(shared_opens)))
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
