#!/usr/bin/env python3
"""Bind the calling process to its GPUs' nearest CPUs and NIC with gputopo.

For processes that another scheduler handed GPUs to (a Ray actor or task, a
notebook, a service): asks ``gputopo plan --gpus <its GPUs> --ntasks 1
--format json`` for the binding the Slurm plugin would give one task on those
GPUs, then

* restricts the process to the planned CPUs (``os.sched_setaffinity``; only
  CPUs it may already use: a container's cpuset is never widened),
* exports GPUTOPO_MODE, GPUTOPO_GPUS, GPUTOPO_CPUS, GPUTOPO_MEMS, GPUTOPO_NIC,
  CUDA_DEVICE_ORDER=PCI_BUS_ID, NCCL_IB_HCA (the exact-match list of the
  node's NICs) and UCX_NET_DEVICES (the nearest NIC, port 1), keeping any of
  them already set (the user's value wins, as with gputopo-launch),
* leaves CUDA_VISIBLE_DEVICES alone (Ray owns it).

The GPUs: ``ray.get_gpu_ids()`` inside a Ray worker, else the ``gpus``
argument, else CUDA_VISIBLE_DEVICES. They are GPU indices in PCI bus-id
order (what Ray and ``nvidia-smi`` call GPU ids with CUDA_DEVICE_ORDER=PCI_BUS_ID).
Memory placement (the NUMA nodes in GPUTOPO_MEMS) is not applied: the
standard library has no mbind; ``numactl --membind`` can use the value.

Standard library only. As a program: ``gputopo_bind.py [--gpus 0,1]
[--topology FILE] [--gputopo PATH] [-- PROGRAM ARGS...]`` binds itself and
then execs PROGRAM (or prints the binding as JSON).
"""

import json
import os
import shutil
import subprocess
import sys

ENV_KEEP_USER = ("CUDA_DEVICE_ORDER", "NCCL_IB_HCA", "UCX_NET_DEVICES")


def parse_cpulist(text):
    """'0-3,8' -> {0, 1, 2, 3, 8}"""
    cpus = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def format_cpulist(cpus):
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
        run = [c]
    if run:
        out.append(str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1]))
    return ",".join(out)


def my_gpus(gpus=None, environ=None):
    """The GPU indices this process was given."""
    environ = os.environ if environ is None else environ
    if gpus is not None:
        return [int(g) for g in gpus]
    try:
        import ray  # noqa: F401 (only inside a Ray worker)

        if ray.is_initialized():
            ids = ray.get_gpu_ids()
            if ids:
                return [int(g) for g in ids]
    except ImportError:
        pass
    visible = environ.get("CUDA_VISIBLE_DEVICES", "")
    return [int(g) for g in visible.split(",") if g.strip().isdigit()]


def plan(gpus, gputopo=None, topology=None, timeout=120):
    """The one-task plan on `gpus` (the JSON of `gputopo plan`)."""
    exe = gputopo or os.environ.get("GPUTOPO") or shutil.which("gputopo") or "gputopo"
    cmd = [exe, "plan", "--gpus", ",".join(str(g) for g in gpus), "--ntasks", "1", "--format", "json"]
    if topology:
        cmd += ["--topology", topology]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd), done.returncode, done.stderr.decode().strip()))
    return json.loads(done.stdout.decode())


def binding_env(p):
    """The variables for the plan's one task."""
    task = p["tasks"][0]
    env = {
        "GPUTOPO_MODE": p["mode"],
        "GPUTOPO_GPUS": ",".join(str(g) for g in task["gpus"]),
        "GPUTOPO_CPUS": task["cpus"],
        "GPUTOPO_MEMS": task["mems"],
        "GPUTOPO_NIC": ",".join(task["nics"]),
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    if p.get("node_nics"):
        env["NCCL_IB_HCA"] = "=" + ",".join(p["node_nics"])
    if task["nics"]:
        env["UCX_NET_DEVICES"] = task["nics"][0] + ":1"
    return {k: v for k, v in env.items() if v != ""}


def bind(gpus=None, gputopo=None, topology=None, environ=None):
    """Plan, apply the CPU affinity, export the variables. Returns what was done:
    {"gpus", "cpus" (applied, "" none), "env" (set), "kept" (user values), "note"}.
    Never raises for a binding that cannot be applied: the note says why."""
    environ = os.environ if environ is None else environ
    result = {"gpus": [], "cpus": "", "env": {}, "kept": {}, "note": ""}
    ids = my_gpus(gpus, environ)
    result["gpus"] = ids
    if not ids:
        result["note"] = "no GPUs (ray.get_gpu_ids(), gpus= or CUDA_VISIBLE_DEVICES): nothing to bind"
        return result
    try:
        p = plan(ids, gputopo, topology)
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        result["note"] = "gputopo plan: %s; running unbound" % e
        return result
    env = binding_env(p)
    for name, value in env.items():
        if name in ENV_KEEP_USER and environ.get(name):
            result["kept"][name] = environ[name]
            continue
        environ[name] = value
        result["env"][name] = value
    planned = parse_cpulist(p["tasks"][0]["cpus"])
    usable = planned & os.sched_getaffinity(0)
    if usable:
        os.sched_setaffinity(0, usable)
        result["cpus"] = format_cpulist(usable)
        if usable != planned:
            result["note"] = "planned CPUs %s, usable here %s" % (p["tasks"][0]["cpus"], result["cpus"])
    else:
        result["note"] = "planned CPUs %s are not usable here; affinity unchanged" % p["tasks"][0]["cpus"]
    return result


def main(argv):
    args, program = argv, []
    if "--" in argv:
        cut = argv.index("--")
        args, program = argv[:cut], argv[cut + 1:]
    opts = {"--gpus": None, "--topology": None, "--gputopo": None}
    i = 0
    while i < len(args):
        if args[i] not in opts or i + 1 >= len(args):
            sys.stderr.write("usage: gputopo_bind.py [--gpus 0,1] [--topology FILE] [--gputopo PATH] [-- PROGRAM ARGS...]\n")
            return 2
        opts[args[i]] = args[i + 1]
        i += 2
    gpus = None if opts["--gpus"] is None else [int(g) for g in opts["--gpus"].split(",") if g]
    result = bind(gpus, opts["--gputopo"], opts["--topology"])
    if result["note"]:
        sys.stderr.write("gputopo: %s\n" % result["note"])
    if not program:
        print(json.dumps(result, sort_keys=True))
        return 0
    os.execvp(program[0], program)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
