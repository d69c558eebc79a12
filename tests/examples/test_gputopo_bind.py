#!/usr/bin/env python3
"""Tests for examples/ray/gputopo_bind.py (run by the unit tests:
tests/unit/test_examples.cpp). The topology is this host's (the cluster
harness's _host_topology: an NCCL topology XML whose CPUs are this machine's,
two GPUs with a NIC each), so the CPU affinity can really be applied.
    GPUTOPO_CLI=build/gputopo python3 tests/examples/test_gputopo_bind.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "examples", "ray"))

import gputopo_bind  # noqa: E402

CLI = os.environ.get("GPUTOPO_CLI", os.path.join(SRC, "build", "gputopo"))


def host_topology(path):
    harness = os.path.join(SRC, "tests", "cluster", "harness.sh")
    subprocess.run(["bash", "-c", 'source "$1" && _host_topology "$2"', "bash", harness, path], check=True)


class GputopoBind(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gputopo-bind-")
        cls.topo = os.path.join(cls.tmp, "host.xml")
        host_topology(cls.topo)

    def plan(self, gpu):
        out = subprocess.run([CLI, "plan", "--topology", self.topo, "--gpus", str(gpu), "--ntasks", "1",
                              "--format", "json"], check=True, stdout=subprocess.PIPE).stdout
        return json.loads(out)["tasks"][0]

    def run_helper(self, args, env_extra=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUTOPO_", "NCCL_", "UCX_", "CUDA_"))}
        env.update(env_extra or {})
        probe = "import os, json; print(json.dumps({'cpus': sorted(os.sched_getaffinity(0)), " \
                "'env': {k: v for k, v in os.environ.items() if k.startswith(('GPUTOPO_', 'NCCL_', 'UCX_', 'CUDA_'))}}))"
        cmd = [sys.executable, os.path.join(SRC, "examples", "ray", "gputopo_bind.py"), "--gputopo", CLI,
               "--topology", self.topo] + args + ["--", sys.executable, "-c", probe]
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        return json.loads(done.stdout.decode()), done.stderr.decode()

    def test_binds_each_gpu_to_its_planned_cpus_and_nic(self):
        allowed = os.sched_getaffinity(0)
        for gpu in (0, 1):
            task = self.plan(gpu)
            got, _ = self.run_helper(["--gpus", str(gpu)])
            want = gputopo_bind.parse_cpulist(task["cpus"]) & allowed
            self.assertTrue(want, "the host topology's CPUs are this host's")
            self.assertEqual(set(got["cpus"]), want)
            self.assertEqual(got["env"]["GPUTOPO_GPUS"], str(gpu))
            self.assertEqual(got["env"]["GPUTOPO_NIC"], ",".join(task["nics"]))
            self.assertEqual(got["env"]["UCX_NET_DEVICES"], task["nics"][0] + ":1")
            self.assertTrue(got["env"]["NCCL_IB_HCA"].startswith("="))
            self.assertEqual(got["env"]["CUDA_DEVICE_ORDER"], "PCI_BUS_ID")
            self.assertNotIn("CUDA_VISIBLE_DEVICES", got["env"])  # Ray's to set

    def test_gpus_from_cuda_visible_devices_and_user_values_win(self):
        task = self.plan(1)
        got, _ = self.run_helper([], {"CUDA_VISIBLE_DEVICES": "1", "UCX_NET_DEVICES": "mine:1"})
        self.assertEqual(got["env"]["GPUTOPO_GPUS"], "1")
        self.assertEqual(got["env"]["UCX_NET_DEVICES"], "mine:1")
        self.assertEqual(got["env"]["GPUTOPO_NIC"], ",".join(task["nics"]))

    def test_no_gpus_or_bad_gputopo_leave_the_process_unbound(self):
        before = sorted(os.sched_getaffinity(0))
        got, err = self.run_helper([])
        self.assertEqual(got["cpus"], before)
        self.assertIn("nothing to bind", err)
        r = gputopo_bind.bind(gpus=[0], gputopo="/nonexistent/gputopo", environ={})
        self.assertIn("running unbound", r["note"])
        self.assertEqual(r["env"], {})

    def test_affinity_narrowed_to_the_plan(self):
        # This host's topology plans every CPU for either GPU on a small
        # machine; a stand-in gputopo that plans one CPU shows the affinity is
        # really applied (and never widened beyond what the process may use).
        allowed = sorted(os.sched_getaffinity(0))
        one = allowed[-1]
        fake = os.path.join(self.tmp, "fake-gputopo")
        plan = {"mode": "closest", "tasks": [{"task": 0, "gpus": [3], "cpus": "%d,%d" % (one, 4096),
                                              "mems": "1", "nics": ["mlx5_3"], "island": 0}], "node_nics": ["mlx5_3"]}
        with open(fake, "w") as f:
            f.write("#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % json.dumps(plan))
        os.chmod(fake, 0o755)
        probe = "import os; print(sorted(os.sched_getaffinity(0)))"
        out = subprocess.run([sys.executable, os.path.join(SRC, "examples", "ray", "gputopo_bind.py"), "--gputopo", fake,
                              "--gpus", "3", "--", sys.executable, "-c", probe], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, check=True)
        self.assertEqual(out.stdout.decode().strip(), str([one]))
        self.assertIn("usable here %d" % one, out.stderr.decode())

    def test_cpulist_round_trip(self):
        for text in ("0", "0-3", "0-3,8,10-11"):
            self.assertEqual(gputopo_bind.format_cpulist(gputopo_bind.parse_cpulist(text)), text)


if __name__ == "__main__":
    unittest.main()
