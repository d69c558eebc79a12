"""What a program run by `gputopo run` calls: heartbeats, checkpoint reports.

Standard library only; importable from any Python 3.6+. `gputopo run` puts the
installed copy (PREFIX/share/gputopo/python) on the step's PYTHONPATH; a copy
beside the training script works as well.

    import gputopo_run
    start = gputopo_run.last_checkpoint()      # None on the first start
    for step in ...:
        train_step()
        gputopo_run.heartbeat(step)            # from the training loop itself
        if saved: gputopo_run.report_checkpoint(path)   # rank 0

For `gputopo run --slow-nodes`, the part of each step that does not wait for
the other ranks goes inside `with gputopo_run.busy():` (or the program passes
the seconds it measured itself: heartbeat(step, busy=SECONDS)): in data
parallelism every rank's step counter advances at the slowest rank's pace, and
only the time in its own work tells the slow node apart.

Call heartbeat() from the loop that makes progress, not from a thread of its
own: the step it is given is the progress `--hang-timeout` watches. The helper
adds a writer thread of its own that only says the process lives and where the
loop is (inside torch, waiting for the other ranks, or in the program's code),
so that a hang is blamed on the rank that hung. Outside `gputopo run` (no
GPUTOPO_HEARTBEAT) every call does nothing.
"""

import os
import sys
import threading
import time

__all__ = ["heartbeat", "busy", "report_checkpoint", "last_checkpoint", "restart_count", "rank"]

# Relative paths in GPUTOPO_* count from where the program started, not from a
# directory it changes to later (Hydra before 1.2 does).
_START_DIR = os.getcwd()
_last_beat = None
_progress = 0
_progress_time = 0.0
_lock = threading.Lock()
_writer = None
_warned = False
_loop_thread = None  # the thread that calls heartbeat(): the training loop
_busy_total = None  # seconds in busy() sections and heartbeat(busy=) so far; None: never reported
# The frameworks whose calls wait for the other ranks (collectives, backward).
_FRAMEWORKS = ("torch",)


def _framework_dirs():
    dirs = []
    for name in _FRAMEWORKS:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return dirs


def rank():
    """This process's rank (SLURM_PROCID; RANK when Slurm's is absent), or 0."""
    for name in ("SLURM_PROCID", "RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def _absolute(path):
    return path if os.path.isabs(path) else os.path.join(_START_DIR, path)


def _write_file(path, text):
    """Writes `text` to `path` through a fresh file (never through a planted link or
    file), renamed into place: a reader never sees half a line."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.unlink(tmp)  # a leftover, or a link someone put there: the link itself goes
    except OSError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _warn_once(what, err):
    global _warned
    if not _warned:
        _warned = True
        sys.stderr.write("gputopo_run: %s: %s (the program goes on)\n" % (what, err))


def _beat_path():
    pattern = os.environ.get("GPUTOPO_HEARTBEAT")
    if not pattern:
        return None
    r = str(rank())
    return _absolute(pattern.replace("%r", r) if "%r" in pattern else "%s.%s" % (pattern, r))


def _where():
    """Where the training loop is now: ("c", place) inside the framework (torch: a
    collective, backward, which waits for the other ranks), ("u", place) in the
    program's own code. The supervisor uses it to tell a rank that hung in its
    own code from the ranks that wait for it."""
    frame = sys._current_frames().get(_loop_thread) if _loop_thread is not None else None
    if frame is None:
        return "u", "?"
    name = frame.f_code.co_filename
    state = "c" if any(name.startswith(d) for d in _framework_dirs()) else "u"
    return state, "%s:%d" % (os.path.basename(name).replace(" ", "_"), frame.f_lineno)


def _write_beat(path, where=None):
    state, place = where or _where()
    with _lock:
        text = "%d %.6f %s %s" % (_progress, _progress_time, state, place)
        text += "\n" if _busy_total is None else " %.6f\n" % _busy_total
    try:
        _write_file(path, text)
        return True
    except OSError as err:
        _warn_once("heartbeat " + path, err)
        return False


def _keep_alive(path, interval):
    # Rewrites the same progress while the process lives: a rank that waits (in a
    # collective) is told apart from one that stopped (process stopped, node frozen).
    while True:
        time.sleep(interval)
        _write_beat(path)


def _add_busy(seconds):
    global _busy_total
    with _lock:
        _busy_total = (_busy_total or 0.0) + max(0.0, float(seconds))


class busy(object):
    """`with gputopo_run.busy(): ...` around the part of a training step that does
    not wait for the other ranks (on CPU: forward, the loss; on GPUs the kernels
    run later: synchronize before leaving it, or time them with CUDA events and
    pass heartbeat(step, busy=SECONDS) instead). Its wall time, summed, is what
    `gputopo run` compares between nodes to find a slow one. Cheap (two clock
    reads); outside `gputopo run` nothing reads it."""

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        _add_busy(time.perf_counter() - self._t0)
        return False


def heartbeat(step=None, min_interval=1.0, busy=None):
    """Records progress: `step` (the training step reached, an int) or, without
    it, one step more than the last call. Call it from the training loop itself.
    `busy`: seconds of this step the rank spent in its own work (not waiting for
    other ranks), when the program measures that itself (CUDA events); else the
    gputopo_run.busy() sections count it.

    The file GPUTOPO_HEARTBEAT names (%r = the rank) holds "STEP UNIX_TIME STATE WHERE [BUSY]"; it is
    written at most once per `min_interval` seconds from here, and once a second
    by a writer thread while the process lives (the thread says the process is
    alive, only the loop says it makes progress). Never raises: a file that cannot
    be written is reported once on stderr. Returns True when this call wrote it.
    """
    global _last_beat, _progress, _progress_time, _writer, _loop_thread
    path = _beat_path()
    if not path:
        return False
    _loop_thread = threading.get_ident()
    if busy is not None:
        _add_busy(busy)
    with _lock:
        new = int(step) if step is not None else _progress + 1
        if new != _progress or _progress_time == 0.0:
            _progress, _progress_time = new, time.time()
    if _writer is None:
        _writer = threading.Thread(target=_keep_alive, args=(path, max(0.2, min(1.0, min_interval))),
                                   name="gputopo_run-heartbeat", daemon=True)
        _writer.start()
    now = time.monotonic()
    if _last_beat is not None and now - _last_beat < min_interval:
        return False
    if not _write_beat(path, ("u", "heartbeat")):
        return False
    _last_beat = now
    return True


def report_checkpoint(path):
    """Rank 0, after each save: `path` is what the next start gets as last_checkpoint().
    Never raises: returns False (and says why once on stderr) when it cannot write."""
    report = os.environ.get("GPUTOPO_CHECKPOINT_REPORT")
    if not report:
        return False
    try:
        _write_file(_absolute(report), str(path).replace("\n", " ") + "\n")
        return True
    except OSError as err:
        _warn_once("checkpoint report " + report, err)
        return False


def last_checkpoint():
    """The checkpoint the program last reported before this start; None if none."""
    return os.environ.get("GPUTOPO_LAST_CHECKPOINT") or None


def restart_count():
    """0 on the first start, then the restarts so far (in the job and by requeue)."""
    value = os.environ.get("GPUTOPO_RESTART_COUNT", "")
    return int(value) if value.isdigit() else 0


# ---- Checkpoint replica peers (gputopo run; run/replica_peers.hpp) ----
#
# `gputopo run` gives every node of the step a peer in another failure domain
# (island, or power domain) that keeps a copy of its checkpoint shard, and
# writes the assignment to the file GPUTOPO_REPLICAS names, read here:
#
#     peer = gputopo_run.replica_peer_rank()    # send my shard to it after each checkpoint
#     keep = gputopo_run.replica_keeps_rank()   # receive (and keep) that rank's shard
#     src = gputopo_run.restore_source()        # not None: this node replaced one; its
#                                               # shard comes from src["rank"] (on src["node"])
#     for r in gputopo_run.restore_targets():   # ranks to send the kept shard to now
#         ...
#
# Ranks: slot i of the step holds ranks i*T .. i*T+T-1 (T tasks per node); a
# rank's replica is on the peer slot's rank with the same local index.
# replication_jump() is NVRx's replication_jump for its local checkpointing
# (CliqueReplicationStrategy, replication_factor 2); None when the plan is not
# NVRx pairs. Outside `gputopo run` every function returns None or [].

_replica_table = None


def _replicas():
    """The parsed table: {"header": {...}, "slots": [{...}, ...]}, or None."""
    global _replica_table
    path = os.environ.get("GPUTOPO_REPLICAS")
    if not path:
        return None
    if _replica_table is None or _replica_table[0] != path:
        header, slots = {}, []
        try:
            with open(_absolute(path)) as f:
                for line in f:
                    fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
                    fields = {k: ("" if v == "-" else v) for k, v in fields.items()}
                    if "slot" in fields:
                        fields["slot"] = int(fields["slot"])
                        slots.append(fields)
                    elif "rule" in fields:
                        header = fields
        except (OSError, ValueError) as err:
            _warn_once("replica table " + path, err)
            return None
        _replica_table = (path, {"header": header, "slots": slots})
    return _replica_table[1]


def _tasks_per_node(table):
    value = table["header"].get("tasks_per_node", "1")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def replica_slot():
    """This node's line of the table (a dict: slot, node, domain, peer, peer_domain,
    keeps, replaced, restore_from), found by SLURMD_NODENAME, else by rank; None
    outside `gputopo run`."""
    table = _replicas()
    if not table:
        return None
    node = os.environ.get("SLURMD_NODENAME", "")
    for row in table["slots"]:
        if row["node"] == node:
            return row
    slot = rank() // _tasks_per_node(table)
    return table["slots"][slot] if slot < len(table["slots"]) else None


def _rank_on(node_name):
    """The rank on `node_name` with this rank's local index; None if not a slot."""
    table = _replicas()
    if not table or not node_name:
        return None
    t = _tasks_per_node(table)
    for row in table["slots"]:
        if row["node"] == node_name:
            return row["slot"] * t + rank() % t
    return None


def replica_peer():
    """The node that keeps this node's replica (send to it); None if none."""
    row = replica_slot()
    return (row or {}).get("peer") or None


def replica_peer_rank():
    """The rank that keeps this rank's replica; None if none."""
    return _rank_on(replica_peer())


def replica_keeps_rank():
    """The rank whose replica this rank keeps (receive from it); None if none."""
    row = replica_slot()
    return _rank_on((row or {}).get("keeps"))


def restore_source():
    """Where this node's state is when it replaced a node since the last
    checkpoint: {"node": peer node, "rank": peer rank, "replaced": the node it
    replaced}; None when its state is its own (or was lost: use the shared copy)."""
    row = replica_slot()
    if not row or not row.get("restore_from"):
        return None
    return {"node": row["restore_from"], "rank": _rank_on(row["restore_from"]), "replaced": row.get("replaced")}


def restore_targets():
    """The ranks this rank must send the replica it keeps to, now (their node
    replaced one whose replica is here): [] when none."""
    table = _replicas()
    me = replica_slot()
    if not table or not me:
        return []
    t = _tasks_per_node(table)
    return [row["slot"] * t + rank() % t for row in table["slots"]
            if row.get("restore_from") and row.get("restore_from") == me["node"]]


def replication_jump():
    """NVRx's replication_jump (ranks) for this step, None when the plan is not NVRx pairs."""
    value = os.environ.get("GPUTOPO_REPLICATION_JUMP", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


__all__ += ["replica_slot", "replica_peer", "replica_peer_rank", "replica_keeps_rank", "restore_source",
            "restore_targets", "replication_jump"]
