#!/usr/bin/env bash
# The plugin as `make install` puts it: exported symbols, installed files, the
# plugstack.conf.d line with the real path, and the installed .so working in a job.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 8
cluster_ensure "${1:-build}" || { echo "not ok - plugin install: cluster"; exit 1; }
fails=0
result() {
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fails=$((fails + 1)); fi
}

bad=$(nm -D --defined-only "$CLUSTER_PLUGIN" | awk '{print $3}' | grep -vE '^(plugin_[a-z_]+|slurm_spank_[a-z_]+|spank_plugin_version|spank_options)$')
names=$(nm -D --defined-only "$CLUSTER_PLUGIN" | awk '{print $3}' | tr '\n' ' ')
[ -z "$bad" ] && echo "$names" | grep -q plugin_name && echo "$names" | grep -q slurm_spank_task_init
result "gputopo.so exports only plugin_*, slurm_spank_* and spank_* symbols" $? "unexpected: $bad"

# Costs nothing unused: neither the plugin nor the launcher links hwloc, libxml2 or ICU
# (the readers are gputopo-readers.so, loaded only to parse XML or discover live).
heavy=$(ldd "$CLUSTER_PLUGIN" "$CLUSTER_BUILD/gputopo-launch" | grep -E 'libhwloc|libxml2|libicu')
mod=$(ldd "$CLUSTER_BUILD/gputopo-readers.so" | grep -cE 'libhwloc|libxml2')
[ -z "$heavy" ] && [ "$mod" = 2 ]
result "ldd: gputopo.so and gputopo-launch link none of hwloc, libxml2, ICU; gputopo-readers.so does" $? "$heavy (module: $mod)"

# At run time: a slurmstepd that reads a fresh cache= snapshot does not load the readers (nor
# libxml2, ICU); the one that first reads the XML does (each task prints what its slurmstepd
# has mapped). Not hwloc: Debian's slurmstepd links it itself.
plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml cache=$CLUSTER_DIR/cache-install"
mkdir -p "$CLUSTER_DIR/cache-install"
maps() {
    timeout 60 srun -w n3 -N1 -n1 --gpus-per-task=1 --gpu-topo=closest \
        bash -c 'echo "M $GPUTOPO_GPUS $(grep -cE "libxml2|libicu|gputopo-readers" /proc/$PPID/maps)"' 2>&1
}
first=$(maps)
second=$(maps)
echo "$first" | grep -qE '^M [0-9]+ [1-9]' && echo "$second" | grep -qE '^M [0-9]+ 0$'
result "slurmstepd maps gputopo-readers.so, libxml2, ICU only to read the XML once; with a fresh snapshot none" $? "first: $first second: $second"
plugstack_default

dest=$CLUSTER_DIR/tmp/destdir
# -o all: install what is built, do not rebuild.
make -s -C "$CLUSTER_SRC" -o all install BUILD="$CLUSTER_BUILD" DESTDIR="$dest" PREFIX=/usr/local > "$dest.log" 2>&1
rc=$?
so=$(find "$dest" -name gputopo.so | head -n 1)
conf=$dest/etc/slurm/plugstack.conf.d/gputopo.conf
[ "$rc" -eq 0 ] && [ -n "$so" ] && [ -x "$dest/usr/local/bin/gputopo" ] && [ -f "$dest/usr/local/share/man/man8/gputopo.8" ] &&
    python3 -B -c "import sys; sys.path.insert(0, sys.argv[1]); import gputopo_run" "$dest/usr/local/share/gputopo/python" &&
    [ -f "$conf" ] && ! grep -q @PLUGIN@ "$conf" && grep -qE "^optional /.*/gputopo.so" "$conf"
result "make install DESTDIR=: plugin, CLI, gputopo(8), the Python helper gputopo_run and plugstack.conf.d/gputopo.conf with the plugin path" $? \
    "rc=$rc so=$so $(tail -n 3 "$dest.log") $(cat "$conf" 2>/dev/null | grep -v '^#')"

# An admin's own snippet is kept; the new one goes beside it as .dist.
echo "# the admin's own line" >> "$conf"
mine=$(cat "$conf")
make -s -C "$CLUSTER_SRC" -o all install BUILD="$CLUSTER_BUILD" DESTDIR="$dest" PREFIX=/usr/local > "$dest.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ "$(cat "$conf")" = "$mine" ] && [ -f "$conf.dist" ] && ! grep -q "admin's own" "$conf.dist" && grep -q "kept" "$dest.log"
result "make install again: the changed plugstack.conf.d/gputopo.conf is kept, the new one is gputopo.conf.dist" $? \
    "rc=$rc $(tail -n 3 "$dest.log")"

if [ -n "$so" ]; then
    # The installed module is not under the plugin's directory here (DESTDIR): readers= names it.
    plugstack_set_line "optional $so topology=$CLUSTER_DIR/topo/%n.xml readers=$dest/usr/local/lib/gputopo/gputopo-readers.so"
    out=$(with_timeout 60 srun -w n1 -N1 -n2 --gpus-per-task=1 --gpu-topo=closest,verbose bash -c 'echo "T $GPUTOPO_CPUS $(grep Cpus_allowed_list /proc/self/status | cut -f2)"' 2>&1)
    rc=$?
    # Each task's planned CPUs are its real affinity.
    [ "$rc" -eq 0 ] && [ "$(echo "$out" | awk '$1 == "T" && $2 == $3' | wc -l)" = 2 ] && [ "$(echo "$out" | grep -c '^gputopo: n1 task')" = 2 ]
    result "the installed gputopo.so binds tasks" $? "rc=$rc $out"
    plugstack_default
fi
# The installed `gputopo run` puts the installed helper on its step's PYTHONPATH (the import
# writes __pycache__ beside it, as a root user's would: make uninstall removes it).
out=$(cd "$CLUSTER_DIR/tmp" && with_timeout 90 sbatch --wait -N1 -o "$dest.job" --wrap \
    "$dest/usr/local/bin/gputopo run --state-dir $CLUSTER_DIR/tmp/install-run -- /usr/bin/python3 -c 'import gputopo_run; print(\"H\", gputopo_run.__file__)'" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && grep -qx "H $dest/usr/local/share/gputopo/python/gputopo_run.py" "$dest.job"
result "the installed gputopo run: its program imports the installed gputopo_run without a PYTHONPATH of its own" $? \
    "rc=$rc $out $(tail -n 5 "$dest.job" 2>/dev/null)"
make -s -C "$CLUSTER_SRC" uninstall BUILD="$CLUSTER_BUILD" DESTDIR="$dest" PREFIX=/usr/local > "$dest.log" 2>&1
rc=$?
left=$(find "$dest" -type f)
[ "$rc" -eq 0 ] && [ "$left" = "$conf" ] && grep -q "admin's own" "$conf"
result "make uninstall removes every installed file but the admin's changed snippet" $? "rc=$rc left: $left"
rm -rf "$dest" "$dest.log" "$dest.job"
[ "$fails" -eq 0 ]
