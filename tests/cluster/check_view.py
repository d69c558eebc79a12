#!/usr/bin/env python3
"""Checks each task's real view (view.sh lines) against what a user's program would do.

  check_view.py NAME FILE --tasks N [--opens K] [--disjoint] [--same] [--cpus A;B;...]
                [--mempolicy P] [--never-open G,...] [--physical T:G,...;...] [--isolated]
                [--cpu-bind-true] [--own-at first|local]

Every task line holds: cvd / rocr (what gputopo or Slurm left in CUDA_VISIBLE_DEVICES /
ROCR_VISIBLE_DEVICES), gpus (GPUTOPO_GPUS), open / denied (the device files the task can
open: task-view), cpus (Cpus_allowed_list), mempolicy (get_mempolicy).

Always checked, per task: the program's devices are real. CUDA and ROCm number the
devices a task can open from 0, so each entry of the visible list (rocr on AMD nodes,
cvd elsewhere) must be below the number of devices the task opens; the GPU the
program's device k really is = the k-th device it can open. GPUTOPO_GPUS (physical
indices) must be those GPUs: equal to them with --isolated (each task sees only its
own), among them otherwise.
Options: --opens K every task opens exactly K GPU devices; --disjoint no two tasks open
the same; --same every task opens the same; --cpus the tasks' Cpus_allowed_list in
local-task order; --mempolicy every task's policy ("preferred:0"); --never-open these
device indices are opened by no task; --physical "T:G1,G2;..." task T's program devices
are physical GPUs G1,G2 in this order; --cpu-bind-true each task's SLURM_CPU_BIND says
what it really has: its mask_cpu entry (the local task's position) is its Cpus_allowed_list;
--own-at first: each task's program devices start with its own GPUTOPO_GPUS (in that order);
local: its program device at position LOCAL_RANK is its (one) GPUTOPO_GPUS (share's order, for
torch.cuda.set_device(LOCAL_RANK)); both: no two tasks have a GPU of GPUTOPO_GPUS in common.
Prints "ok - NAME" or "not ok - NAME" and the reasons.
"""
import argparse
import re
import sys


def index_of(dev):
    """nvidiaN -> N, renderD(128+N) -> N."""
    m = re.match(r"nvidia(\d+)$", dev)
    if m:
        return int(m.group(1))
    m = re.match(r"renderD(\d+)$", dev)
    if m:
        return int(m.group(1)) - 128
    return None


def ints(text):
    if text in ("", "-", "unset"):
        return []
    out = []
    for p in text.split(","):
        if "-" in p:
            a, b = p.split("-")
            out += list(range(int(a), int(b) + 1))
        else:
            out.append(int(p))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("file")
    ap.add_argument("--tasks", type=int, required=True)
    ap.add_argument("--opens", type=int)
    ap.add_argument("--disjoint", action="store_true")
    ap.add_argument("--same", action="store_true")
    ap.add_argument("--isolated", action="store_true")
    ap.add_argument("--cpus")
    ap.add_argument("--mempolicy")
    ap.add_argument("--never-open")
    ap.add_argument("--physical")
    ap.add_argument("--cpu-bind-true", action="store_true")
    ap.add_argument("--own-at", choices=("first", "local"))
    a = ap.parse_args()

    tasks = {}
    for line in open(a.file, errors="replace"):
        if not line.startswith("TASK "):
            continue
        kv = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
        tasks[int(kv["local"])] = kv
    errors = []
    if len(tasks) != a.tasks:
        errors.append("%d tasks reported, expected %d" % (len(tasks), a.tasks))
    used = {}
    for t, kv in sorted(tasks.items()):
        opened = [d for d in kv.get("open", "-").split(",") if d != "-"]
        gpus_open = [index_of(d) for d in opened if index_of(d) is not None]
        amd = any(d.startswith("renderD") for d in opened + kv.get("denied", "-").split(","))
        visible_text = kv.get("rocr" if amd else "cvd", "unset")
        try:
            visible = ints(visible_text)
        except ValueError:
            errors.append("task %d: visible devices '%s' are not indices" % (t, visible_text))
            continue
        if len(set(visible)) != len(visible):
            errors.append("task %d: visible '%s' repeats a device" % (t, visible_text))
        bad = [v for v in visible if v >= len(gpus_open)]
        if bad:
            errors.append("task %d: visible '%s' names device(s) %s, but the task can open only %d GPU(s) (%s): "
                          "the program would see no such GPU" % (t, visible_text, bad, len(gpus_open), kv.get("open")))
            continue
        physical = [gpus_open[v] for v in visible]
        used[t] = physical
        claimed = ints(kv.get("gpus", "unset"))
        if a.isolated and sorted(claimed) != sorted(physical):
            errors.append("task %d: GPUTOPO_GPUS=%s but its program's devices are GPUs %s" % (t, kv.get("gpus"), physical))
        if not a.isolated and not set(claimed) <= set(gpus_open):
            errors.append("task %d: GPUTOPO_GPUS=%s names a GPU it cannot open (%s)" % (t, kv.get("gpus"), kv.get("open")))
        if a.opens is not None and len(gpus_open) != a.opens:
            errors.append("task %d opens %d GPU(s) (%s), expected %d" % (t, len(gpus_open), kv.get("open"), a.opens))
        kv["_open"] = gpus_open
    if a.disjoint:
        seen = {}
        for t, kv in tasks.items():
            for g in kv.get("_open", []):
                if g in seen:
                    errors.append("tasks %d and %d both open GPU %d" % (seen[g], t, g))
                seen[g] = t
    if a.same:
        sets = {tuple(kv.get("_open", [])) for kv in tasks.values()}
        if len(sets) > 1:
            errors.append("tasks open different GPUs: %s" % sorted(sets))
    if a.never_open:
        never = set(ints(a.never_open))
        for t, kv in tasks.items():
            if never & set(kv.get("_open", [])):
                errors.append("task %d opens GPU(s) %s held by another job" % (t, sorted(never & set(kv["_open"]))))
    if a.cpus:
        want = a.cpus.split(";")
        for t, kv in sorted(tasks.items()):
            if t < len(want) and kv.get("cpus") != want[t]:
                errors.append("task %d: Cpus_allowed_list=%s, expected %s" % (t, kv.get("cpus"), want[t]))
    if a.mempolicy:
        for t, kv in sorted(tasks.items()):
            if kv.get("mempolicy") != a.mempolicy:
                errors.append("task %d: mempolicy %s, expected %s" % (t, kv.get("mempolicy"), a.mempolicy))
    if a.cpu_bind_true:
        for t, kv in sorted(tasks.items()):
            bind = kv.get("cpubind", "unset")
            masks = bind.split("mask_cpu:", 1)[1].split(",") if "mask_cpu:" in bind else []
            try:
                mine = int(masks[t], 16) if t < len(masks) else None
                real = sum(1 << c for c in ints(kv.get("cpus", "")))
            except ValueError:
                mine, real = None, -1
            if mine != real:
                errors.append("task %d: SLURM_CPU_BIND=%s does not say its CPUs (Cpus_allowed_list=%s)"
                              % (t, bind, kv.get("cpus")))
    if a.own_at:
        owner = {}
        for t, kv in sorted(tasks.items()):
            claimed = ints(kv.get("gpus", "unset"))
            mine = used.get(t, [])
            if a.own_at == "first" and (not claimed or mine[:len(claimed)] != claimed):
                errors.append("task %d: its program's devices are GPUs %s, which do not start with its own GPUTOPO_GPUS=%s"
                              % (t, mine, kv.get("gpus")))
            if a.own_at == "local" and (len(claimed) != 1 or len(mine) <= t or mine[t] != claimed[0]):
                errors.append("task %d: its program's devices are GPUs %s, position %d is not its own GPUTOPO_GPUS=%s"
                              % (t, mine, t, kv.get("gpus")))
            for g in claimed:
                if g in owner:
                    errors.append("tasks %d and %d both have GPU %d in GPUTOPO_GPUS" % (owner[g], t, g))
                owner[g] = t
    if a.physical:
        for part in a.physical.split(";"):
            t, gs = part.split(":")
            if used.get(int(t)) != ints(gs):
                errors.append("task %s: its program's devices are GPUs %s, expected %s" % (t, used.get(int(t)), gs))
    if errors:
        print("not ok - " + a.name)
        for e in errors:
            print("#   " + e, file=sys.stderr)
        for t, kv in sorted(tasks.items()):
            print("#   task %d: %s" % (t, " ".join("%s=%s" % (k, v) for k, v in kv.items() if not k.startswith("_"))),
                  file=sys.stderr)
        return 0
    print("ok - " + a.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
