#!/usr/bin/env bash
# gputopo.so under valgrind memcheck, end to end: node n1's slurmd is
# restarted under `valgrind --trace-children=yes`, so slurmd (which loads the
# plugin at start) and every slurmstepd it starts run under memcheck; two
# steps with --gpu-topo=closest,verbose run there (the first writes the
# topology snapshot into cache=, the second reads it), then slurmd is
# restarted normally. Pass: no memcheck error and no definite leak with a
# gputopo frame (our namespace, our entry points, or gputopo.so) in its stack.
# Slurm's own reports are counted and printed, not judged (they are Slurm's).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 3
cluster_ensure "${1:-build}" || { echo "not ok - valgrind: cluster"; exit 1; }
command -v valgrind >/dev/null || { echo "not ok - valgrind: not installed (apt-get install valgrind)"; exit 1; }
w=$CLUSTER_DIR/tmp/valgrind.$$
mkdir -p "$w/cache"
node_idle() {  # NODE SECONDS
    local i
    for i in $(seq 1 $(($2 * 5))); do
        [ "$(sinfo -h -n "$1" -o %t 2>/dev/null)" = idle ] && return 0
        sleep 0.2
    done
    return 1
}
restore() {
    # slurmd under memcheck writes its pid file too (cluster_daemon runs it in a subshell)
    _harness_kill_pidfile "$CLUSTER_DIR/run/slurmd-n1.pid"
    [ -n "${vg_pid:-}" ] && kill -TERM "$vg_pid" 2>/dev/null && wait "$vg_pid" 2>/dev/null
    vg_pid=
    cluster_start_slurmd n1 2>/dev/null
    node_idle n1 60 || echo "# valgrind: n1 did not come back idle" >&2
}

_harness_kill_pidfile "$CLUSTER_DIR/run/slurmd-n1.pid"
cluster_daemon valgrind --tool=memcheck --trace-children=yes --child-silent-after-fork=no \
    --trace-children-skip='*.sh,*/bash,*/sh,*/true,*/env,*/sleep' \
    --leak-check=full --show-leak-kinds=definite --num-callers=30 \
    --log-file="$w/vg.%p.log" slurmd -D -f "$SLURM_CONF" -N n1 > "$w/slurmd.out" 2>&1 &
vg_pid=$!
if ! node_idle n1 120; then
    tap_not_ok "valgrind: slurmd n1 under memcheck registers" "$(tail -n 5 "$w/slurmd.out")"
    tap_not_ok "valgrind: steps run"
    tap_not_ok "valgrind: no memcheck error in gputopo code"
    restore
    exit 0
fi
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml cache=$w/cache"
ok=1
for i in 1 2; do
    with_timeout 240 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest,verbose /bin/true > "$w/step$i.out" 2>&1 || ok=0
    [ "$(grep -c '^gputopo: n1 task [01]: gpus=' "$w/step$i.out")" = 2 ] || ok=0
done
plugstack_default
restore
tap_ok "valgrind: slurmd n1 under memcheck registers"
if [ "$ok" = 1 ] && ls "$w"/cache/*.snap >/dev/null 2>&1; then
    tap_ok "valgrind: two bound steps ran under memcheck (snapshot written, then read)"
else
    tap_not_ok "valgrind: two bound steps ran under memcheck" "$(cat "$w"/step*.out | head -n 8)"
fi

# Error and definite-leak blocks; ours when a frame names gputopo.
python3 - "$w" > "$w/summary" <<'PY'
import glob, re, sys
ours = total = 0
procs = 0
shown = []
for path in glob.glob(sys.argv[1] + "/vg.*.log"):
    text = open(path, errors="replace").read()
    if "slurmstepd" not in text and "slurmd" not in text:
        continue
    procs += 1
    blocks, cur = [], []
    for line in text.splitlines():
        body = re.sub(r"^==\d+== ?", "", line)
        if body.strip() == "":
            if cur: blocks.append(cur)
            cur = []
        else:
            cur.append(body)
    if cur: blocks.append(cur)
    for b in blocks:
        head = b[0]
        is_err = (re.match(r"(Invalid|Conditional jump|Use of uninitialised|Syscall param|Mismatched|Source and destination|Argument|Jump to)", head)
                  or "definitely lost in loss record" in head)
        if not is_err:
            continue
        total += 1
        if any(("gputopo" in l or "slurm_spank_" in l) for l in b[1:]):
            ours += 1
            if len(shown) < 3: shown.append("\n".join(b[:12]))
print("processes=%d errors_total=%d errors_gputopo=%d" % (procs, total, ours))
for s in shown: print(s)
PY
read -r summary < "$w/summary"
echo "# valgrind: $summary"
if [[ "$summary" =~ processes=([0-9]+)\ errors_total=[0-9]+\ errors_gputopo=0$ ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]; then
    tap_ok "valgrind: no memcheck error or definite leak in gputopo code (slurmd + slurmstepd; $summary)"
else
    tap_not_ok "valgrind: no memcheck error in gputopo code" "$(cat "$w/summary")"
fi
exit 0
