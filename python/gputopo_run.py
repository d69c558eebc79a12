"""What a program run by `gputopo run` calls: heartbeats, checkpoint reports.

Standard library only; importable from any Python 3.6+. `gputopo run` puts the
installed copy (PREFIX/share/gputopo/python) on the step's PYTHONPATH; a copy
beside the training script works as well.

    import gputopo_run
    start = gputopo_run.last_checkpoint()      # None on the first start
    for step in ...:
        train_step()
        gputopo_run.heartbeat()                # from the training loop itself
        if saved: gputopo_run.report_checkpoint(path)   # rank 0

Call heartbeat() from the loop that makes progress, not from a thread of its
own: a thread would go on beating while the loop is stuck, and the hang
(`--hang-timeout`) would never be seen. Outside `gputopo run` (no
GPUTOPO_HEARTBEAT) every call does nothing.
"""

import os
import time

__all__ = ["heartbeat", "report_checkpoint", "last_checkpoint", "restart_count", "rank"]

_last_beat = None


def rank():
    """This process's rank (SLURM_PROCID; RANK when Slurm's is absent), or 0."""
    for name in ("SLURM_PROCID", "RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def heartbeat(min_interval=1.0):
    """Touches this rank's heartbeat file (GPUTOPO_HEARTBEAT, %r = the rank).

    At most once per `min_interval` seconds, so that a loop of many short steps
    does not load a shared file system; keep it well under --hang-timeout.
    Returns True when the file was touched.
    """
    global _last_beat
    pattern = os.environ.get("GPUTOPO_HEARTBEAT")
    if not pattern:
        return False
    now = time.monotonic()
    if _last_beat is not None and now - _last_beat < min_interval:
        return False
    path = pattern.replace("%r", str(rank())) if "%r" in pattern else "%s.%d" % (pattern, rank())
    with open(path, "a"):
        pass
    os.utime(path, None)
    _last_beat = now
    return True


def report_checkpoint(path):
    """Rank 0, after each save: `path` is what the next start gets as last_checkpoint()."""
    report = os.environ.get("GPUTOPO_CHECKPOINT_REPORT")
    if not report:
        return False
    tmp = "%s.%d.tmp" % (report, os.getpid())
    with open(tmp, "w") as f:
        f.write(str(path) + "\n")
    os.replace(tmp, report)  # never a half-written line for the next start
    return True


def last_checkpoint():
    """The checkpoint the program last reported before this start; None if none."""
    return os.environ.get("GPUTOPO_LAST_CHECKPOINT") or None


def restart_count():
    """0 on the first start, then the restarts so far (in the job and by requeue)."""
    value = os.environ.get("GPUTOPO_RESTART_COUNT", "")
    return int(value) if value.isdigit() else 0
