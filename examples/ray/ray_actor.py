#!/usr/bin/env python3
"""A Ray actor that binds itself to its GPU's nearest CPUs and NIC.

Ray gives the actor a GPU (num_gpus=1) and sets CUDA_VISIBLE_DEVICES; the
actor asks gputopo for that GPU's CPUs and NIC (gputopo_bind.bind, which runs
`gputopo plan --gpus <id> --ntasks 1 --format json`) before it creates any
CUDA context or NCCL communicator, so its threads and NCCL's proxy threads
start on the right socket. `gputopo` must be on PATH on every node (or
GPUTOPO=/path/to/gputopo in the actor's runtime_env).

    python3 ray_actor.py            # on a Ray cluster with GPUs
"""

import os

import ray

from gputopo_bind import bind


@ray.remote(num_gpus=1)
class Trainer:
    def __init__(self):
        self.binding = bind()  # first thing: before torch/jax touch the GPU

    def where(self):
        return {
            "node": ray.util.get_node_ip_address(),
            "gpus": ray.get_gpu_ids(),
            "cpus": sorted(os.sched_getaffinity(0)),
            "binding": self.binding,
        }


if __name__ == "__main__":
    ray.init()
    n = int(ray.cluster_resources().get("GPU", 0))
    here = os.path.dirname(os.path.abspath(__file__))  # gputopo_bind.py travels with the actors
    actors = [Trainer.options(runtime_env={"working_dir": here}).remote()
              for _ in range(n)]
    for info in ray.get([a.where.remote() for a in actors]):
        print(info)
