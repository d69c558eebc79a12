#!/usr/bin/env bash
# Prints the example output block of README.md: the plan `srun --gpu-topo=closest` gives the 8
# tasks of one OCI BM.GPU.H100.8 node (its topology is shipped in tests/fixtures), as
# `gputopo plan` shows it. tests/unit/test_readme.cpp checks that README.md holds exactly this;
# after a change to the planner or the table, run it and paste its output into README.md:
#   bash docs/readme-example.sh [path/to/gputopo]
set -euo pipefail
cd "$(dirname "$0")/.."
gputopo=${1:-${GPUTOPO_CLI:-build/gputopo}}
t=tests/fixtures/topologies/nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml
echo '$ t=tests/fixtures/topologies/nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml'
echo '$ build/gputopo plan --topology $t --ntasks 8 --gpus-per-task 1'
"$gputopo" plan --topology "$t" --ntasks 8 --gpus-per-task 1
