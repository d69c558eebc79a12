#!/usr/bin/env python3
"""Checks a parallel layout from what the tasks really had.

Usage: check_layout.py PROBE_OUT RANKS_JSON LAYOUT ISLANDS

PROBE_OUT: lines "L NODE LOCALID RANK GPUTOPO_RANK ROLE_RANK GROUP_RANK NODE_RANK
WORLD_SIZE LOCAL_WORLD_SIZE" printed by every task. RANKS_JSON: `gputopo ranks
--layout ... --format json` for the same step. LAYOUT: "tp=2,pp=2[,order=...]".
ISLANDS: "n1=rackA,n3=rackA,...".

Checks: RANK is a permutation of 0..WORLD-1 equal to GPUTOPO_RANK and ROLE_RANK;
every node's ranks are the ones the placement gives it; GROUP_RANK (= NODE_RANK)
is RANK // LOCAL_WORLD_SIZE when the node holds one aligned block; and every
group of the framework's formula (Megatron's, written here independently: the
rank is the mixed-radix number of the coordinates in the stated order, first
fastest) spans what the placement says: TP/CP/EP groups the NVLink domains
(nodes) the JSON counts as straddling, DP/PP groups the islands it counts.
"""
import json
import sys

DIMS = ["tp", "cp", "ep", "dp", "pp"]


def fail(*msg):
    print(*msg)
    sys.exit(1)


def main():
    probe, ranks_json, layout, islands = sys.argv[1:5]
    island = dict(kv.split("=") for kv in islands.split(","))
    sizes = {d: 1 for d in DIMS}
    order = "tp-cp-ep-dp-pp"
    for kv in layout.split(","):
        k, v = kv.split("=")
        if k == "order":
            order = v
        else:
            sizes[k] = int(v)
    tasks = []
    for line in open(probe):
        f = line.split()
        if f and f[0] == "L":
            tasks.append(f[1:10])
    if not tasks:
        fail("no task printed its line")
    world = int(tasks[0][7])
    if "dp" not in [kv.split("=")[0] for kv in layout.split(",")]:
        rest = 1
        for d in DIMS:
            if d != "dp":
                rest *= sizes[d]
        sizes["dp"] = world // rest
    node_of = {}
    for node, local, rank, grank, role, group, node_rank, ws, lws in tasks:
        if not (rank == grank == role):
            fail("task", node, local, "RANK", rank, "GPUTOPO_RANK", grank, "ROLE_RANK", role, "differ")
        if group != node_rank:
            fail("task", node, local, "GROUP_RANK", group, "NODE_RANK", node_rank, "differ")
        r = int(rank)
        if r in node_of:
            fail("RANK", r, "given twice:", node_of[r], node)
        node_of[r] = node
    if sorted(node_of) != list(range(world)):
        fail("RANKs", sorted(node_of), "are not 0 ..", world - 1)
    doc = json.load(open(ranks_json))
    want = {row["node"]: sorted(row["ranks"]) for row in doc["nodes"]}
    got = {}
    for r, n in node_of.items():
        got.setdefault(n, []).append(r)
    got = {n: sorted(v) for n, v in got.items()}
    if got != want:
        fail("ranks per node differ from the placement: got", got, "placement", want)
    for node, local, rank, _, _, group, _, _, lws in tasks:
        mine, n = got[node], int(lws)
        block = mine == list(range(mine[0], mine[0] + n)) and mine[0] % n == 0
        if block and group != str(mine[0] // n):
            fail("node", node, "holds ranks", mine, "but GROUP_RANK is", group)
    # The framework's groups, from the ranks the tasks had.
    names = order.split("-")
    strides, s = {}, 1
    for d in names:
        strides[d] = s
        s *= sizes[d]
    spread = {}
    for d in names:
        if sizes[d] <= 1:
            continue
        straddling, max_isl = 0, 0
        for base in range(world):
            if (base // strides[d]) % sizes[d]:
                continue
            members = [base + k * strides[d] for k in range(sizes[d])]
            where = {node_of[m] for m in members}
            isl = {island[n] for n in where}
            if d in ("tp", "cp", "ep"):
                straddling += len(where) > 1
            else:
                straddling += len(isl) > 1
            max_isl = max(max_isl, len(isl))
        spread[d] = (straddling, max_isl)
    for g in doc["groups"]:
        d = g["dim"]
        if d not in spread:
            continue
        if spread[d] != (g["straddling"], g["max_islands"]):
            fail(d, "groups from the tasks' RANKs: straddling, max islands =", spread[d], "; the placement says",
                 (g["straddling"], g["max_islands"]))
    print("ok", layout, "world", world, "spread", spread)


main()
