#!/usr/bin/env python3
"""Checks what each task of an srun got against `gputopo plan` for its node.

  check_binding.py NAME OUTPUT_FILE --gputopo BIN --topo-dir DIR --mode MODE
                   [--isolate|--share] [--real NODE ...] [--amd NODE ...]

OUTPUT_FILE holds the srun's output with one "PROBE KEY=VALUE ..." line per
task (probe.sh). Per node: the step's GPUs are the union of the tasks'
SLURM_STEP_GPUS, the task count is the number of probes; the expected binding
comes from `gputopo plan --topology DIR/NODE.xml --gpus L --ntasks N --mode M
--format json`, turned into variables here by the documented rules (not by
gputopo's own code). Prints "ok - NAME" or "not ok - NAME" plus reasons.
"""
import argparse, json, os, re, subprocess, sys


def nic_port(topology_file, nic):
    """The port of `nic` as the topology file writes it (NCCL: <net name= port=>), else 1."""
    text = open(topology_file, errors="replace").read()
    m = re.search(r'name="%s"[^>]*\bport="(\d+)"' % re.escape(nic), text)
    return int(m.group(1)) if m else 1


def expand(lst):
    out = []
    for part in lst.split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def per_task_count(tres_bind):
    """N of Slurm's per-task GPU binding gpu:per_task:N (SLURMD_TRES_BIND), else 0."""
    m = re.search(r"gpu:(?:verbose,)?per_task:(\d+)", tres_bind)
    return int(m.group(1)) if m else 0


def job_gpus(tasks, node):
    """The GPU indices Slurm gave the job on `node`, as local task 0 read them while the job
    ran (probe.sh JOB_GPU_IDX: "n[2-3]@0-3|..." from scontrol show job -d)."""
    for t in tasks:
        for part in t.get("JOB_GPU_IDX", "").split("|"):
            if "@" not in part:
                continue
            nodes, idx = part.split("@", 1)
            names = subprocess.run(["scontrol", "show", "hostnames", nodes], capture_output=True, text=True)
            if node in names.stdout.split():
                return sorted(expand(idx))
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("output")
    ap.add_argument("--gputopo", required=True)
    ap.add_argument("--topo-dir", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--isolate", action="store_true")
    ap.add_argument("--share", action="store_true")
    ap.add_argument("--real", nargs="*", default=[])
    ap.add_argument("--amd", nargs="*", default=[])
    ap.add_argument("--expect-tasks", type=int, default=0)
    a = ap.parse_args()

    probes = []
    for line in open(a.output, errors="replace"):
        line = line.strip()
        if line.startswith("PROBE"):
            probes.append(dict(w.split("=", 1) for w in line.split()[1:] if "=" in w))
    errors = []
    if not probes:
        errors.append("no task output")
    if a.expect_tasks and len(probes) != a.expect_tasks:
        errors.append("%d tasks reported, expected %d" % (len(probes), a.expect_tasks))
    nodes = {}
    for p in probes:
        nodes.setdefault(p.get("SLURMD_NODENAME", "?"), []).append(p)
    constrained = os.environ.get("CLUSTER_TASK_CONFIG") == "cgroup"
    for node, tasks in sorted(nodes.items()):
        gpus = sorted({g for t in tasks for g in expand(t.get("SLURM_STEP_GPUS", ""))})
        per_task = per_task_count(tasks[0].get("SLURMD_TRES_BIND", "")) if constrained else 0
        if per_task:
            # ConstrainDevices + per-task binding: each task's variables count its own GPUs
            # 0..k-1; the step's GPUs on the node are the job's there (Slurm's own record).
            gpus = job_gpus(tasks, node)
        topo = "%s/%s.xml" % (a.topo_dir, node)
        cmd = [a.gputopo, "plan", "--topology", topo, "--gpus",
               ",".join(map(str, gpus)), "--ntasks", str(len(tasks)), "--mode", a.mode, "--format", "json"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            errors.append("%s: %s failed: %s" % (node, " ".join(cmd), r.stderr.strip()))
            continue
        plan = json.loads(r.stdout)
        ptasks = plan["tasks"]
        # The NIC variables each task gets, as `gputopo plan --env` prints them (verbs names
        # only on InfiniBand/RoCE NICs; EFA and Slingshot get libfabric's instead).
        envcmd = cmd[:-2] + ["--env"]
        er = subprocess.run(envcmd, capture_output=True, text=True)
        nic_env = {}
        for line in er.stdout.splitlines():
            m = re.match(r"task (\d+): ([A-Z_]+)=(.*)$", line)
            if m:
                nic_env.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
        pci_of = {g: p for pt in ptasks for g, p in zip(pt["gpus"], pt["gpu_pci"])}
        for t in tasks:
            lid = int(t["SLURM_LOCALID"])
            want = ptasks[lid]
            own = want["gpus"]
            if per_task:
                # Slurm's rule (22.05: per_task:N blocks of the step's GPUs); the task
                # sees them as 0..N-1 in its own cgroup. CPUs, memory and NICs follow
                # them: t_cgroup_binding.sh reads what the task really has.
                held = gpus[lid * per_task:(lid + 1) * per_task]
                local = ",".join(str(i) for i in range(len(held)))
                exp = {"GPUTOPO_GPUS": ",".join(map(str, held)),
                       "GPUTOPO_GPU_PCI": ",".join(pci_of.get(g, "?") for g in held),
                       "GPUTOPO_MODE": a.mode}
                exp["ROCR_VISIBLE_DEVICES" if node in a.amd else "CUDA_VISIBLE_DEVICES"] = local
                for k, v in exp.items():
                    if t.get(k) != v:
                        errors.append("%s task %d: %s=%r, expected %r" % (node, lid, k, t.get(k), v))
                continue
            several = len(own) > 1
            isolated = a.isolate or (several and not a.share)
            if isolated:
                visible = own
            else:
                visible = []
                for pt in ptasks:
                    for g in pt["gpus"]:
                        if g not in visible:
                            visible.append(g)
                visible += [g for g in gpus if g not in visible]
            exp = {
                "GPUTOPO_MODE": a.mode,
                "GPUTOPO_GPUS": ",".join(map(str, own)),
                "GPUTOPO_GPU_PCI": ",".join(want["gpu_pci"]),
                "GPUTOPO_CPUS": want["cpus"],
                "GPUTOPO_MEMS": want["mems"] if isinstance(want["mems"], str) else ",".join(map(str, want["mems"])),
                "GPUTOPO_NIC": ",".join(want["nics"]),
                # Cross-node islands (Slurm's topology.conf or islands=, mode island) replace the
                # intra-node island id; t_islands.sh checks those.
                "GPUTOPO_ISLAND": None if "GPUTOPO_NUM_ISLANDS" in t else str(want["island"]),
                "NCCL_IB_HCA": nic_env.get(lid, {}).get("NCCL_IB_HCA"),
                "UCX_NET_DEVICES": nic_env.get(lid, {}).get("UCX_NET_DEVICES"),
                "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
            }
            if constrained:
                # The step's device cgroup numbers its GPUs 0..k-1 (Slurm's local index).
                visible = [gpus.index(g) for g in visible]
            if node in a.amd:
                exp["ROCR_VISIBLE_DEVICES"] = ",".join(map(str, visible))
                exp["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(visible)))
            else:
                exp["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, visible))
            if node in a.real:
                exp["Cpus_allowed_list"] = want["cpus"]
            for k in ("NCCL_IB_HCA", "UCX_NET_DEVICES"):
                if exp[k] is None and k in t:
                    errors.append("%s task %d: %s=%r, expected none (not a verbs NIC)" % (node, lid, k, t[k]))
            for k, v in exp.items():
                if v is None or v == "":
                    continue
                if t.get(k) != v:
                    errors.append("%s task %d: %s=%r, expected %r" % (node, lid, k, t.get(k), v))
    if errors:
        print("not ok - %s" % a.name)
        for e in errors[:20]:
            print("#   " + e, file=sys.stderr)
        return 1
    print("ok - %s" % a.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
