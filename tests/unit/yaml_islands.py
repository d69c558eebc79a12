#!/usr/bin/env python3
"""The islands of a Slurm topology.yaml as libyaml reads it (PyYAML's CSafeLoader, the
parser Slurm's serializer/yaml plugin uses): the tree leaves (switches with nodes) and the
blocks of the cluster_default topology (else the first). Prints "NAME HOSTLIST" per island,
"error: ..." and exit 1 when libyaml refuses the text. For test_slurm_bindings.cpp."""
import sys

import yaml


def hostlist(value):
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def main():
    try:
        doc = yaml.load(open(sys.argv[1]).read(), Loader=yaml.CSafeLoader)
    except yaml.YAMLError as e:
        print("error:", str(e).replace("\n", " "))
        return 1
    topos = doc or []
    chosen = next((t for t in topos if t.get("cluster_default") is True), topos[0] if topos else None)
    if not chosen:
        return 0
    if isinstance(chosen.get("tree"), dict):
        for s in chosen["tree"].get("switches") or []:
            if s.get("nodes") is not None:
                print(s["switch"], hostlist(s["nodes"]))
    if isinstance(chosen.get("block"), dict):
        for b in chosen["block"].get("blocks") or []:
            if b.get("nodes") is not None:
                print(b["block"], hostlist(b["nodes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
