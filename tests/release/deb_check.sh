#!/usr/bin/env bash
# Inside a Debian root (tests/release/run.sh SUITE deb): `make deb` for that root's Slurm,
# install and enable the package with the admin guide's own commands (docs/admin-guide.md,
# the blocks marked "first-hour: install-deb" and "enable", extracted by guide_block.sh, not
# retyped), check it as the guide says (`srun --help`, a --gpu-topo=closest,verbose step), run
# a 2-node --gpu-topo job through the installed plugin on a local cluster, remove the package.
# Prints "ok - NAME" / "not ok - NAME"; exits non-zero when one fails.
set -u
cd "$(dirname "$0")/../.."
. tests/cluster/harness.sh
fails=0
result() {
    if [ "$2" -eq 0 ]; then tap_ok "$1"; else tap_not_ok "$1" "$3"; fails=$((fails + 1)); fi
}

log=$(make deb 2>&1)
rc=$?
deb=$(ls build/packages/gputopo_*.deb 2>/dev/null | head -n 1)
major=$(echo "$log" | sed -n 's/.*building against Slurm \([0-9]*\.[0-9]*\).*/\1/p' | head -n 1)
[ "$rc" -eq 0 ] && [ -n "$deb" ] && ! echo "$log" | grep -q '^E: '
result "make deb for Slurm $major: $(basename "${deb:-none}"), lintian reports no errors" $? "$(echo "$log" | tail -n 5)"

# The guide's install command(s), but `make deb` (done above).
install_cmds=$(bash tests/release/guide_block.sh docs/admin-guide.md install-deb | grep -v '^make ')
echo "# admin guide, install: $install_cmds"
bash -c "set -e; $install_cmds" > /tmp/dpkg.log 2>&1
rc=$?
depends=$(dpkg-query -W -f '${Depends}' gputopo 2>/dev/null)
breaks=$(dpkg-query -W -f '${Breaks}' gputopo 2>/dev/null)
next=$(awk -F. '{printf "%s.%02d", $1, $2 + 1}' <<< "$major")
so=$(dpkg -L gputopo 2>/dev/null | grep '/gputopo\.so$')
[ "$rc" -eq 0 ] && echo "$depends" | grep -qF "slurm-wlm-basic-plugins (>= $major) | slurm-smd (>= $major)" &&
    [ "$breaks" = "slurm-wlm-basic-plugins (>= $next), slurm-smd (>= $next)" ] && [ -n "$so" ] &&
    [ "$(stat -c %a "$so")" = 644 ] && file "$so" | grep -q ', stripped' && gputopo --version | grep -q . &&
    PYTHONPATH=/usr/share/gputopo/python python3 -c 'import gputopo_run' 2>/dev/null
result "dpkg -i: gputopo.so (0644, stripped) in Slurm's plugin dir, gputopo_run.py importable, Depends on Debian's or SchedMD's Slurm $major (Breaks $next)" $? \
    "rc=$rc $(tail -n 3 /tmp/dpkg.log) depends=$depends breaks=$breaks so=$so"

if cluster_start build; then
    # The guide's enable steps as printed, in the cluster's configuration directory (its
    # slurm.conf is there, not in /etc/slurm); slurmd runs under the harness, not systemd.
    plugstack_set_line ""
    enable_cmds=$(bash tests/release/guide_block.sh docs/admin-guide.md enable)
    check_cmds=$(bash tests/release/guide_block.sh docs/admin-guide.md check)
    out=$(bash -c "systemctl() { :; }; set -e; ${enable_cmds//\/etc\/slurm/$CLUSTER_DIR/etc}" 2>&1)
    rc=$?
    plugstack_set_line "$(cat "$CLUSTER_DIR/etc/plugstack.conf")"
    help=$(bash -c "$(echo "$check_cmds" | grep -- '--help')" 2>&1)
    step=$(timeout 120 srun -w n1 -N1 -n1 --gpu-topo=closest,verbose true 2>&1)
    step_rc=$?
    [ "$rc" -eq 0 ] && [ "$(readlink "$CLUSTER_DIR/etc/plugstack.conf.d/gputopo.conf")" = /usr/share/gputopo/plugstack.conf ] &&
        echo "$help" | grep -q -e '--gpu-topo' && [ "$step_rc" -eq 0 ] && echo "$step" | grep -q '^gputopo: n1 task 0:'
    result "the admin guide's enable steps (ln -s of the package's snippet, the include line) load the plugin: srun --help lists --gpu-topo, a closest,verbose step binds" $? \
        "rc=$rc $out | help: $help | step rc=$step_rc: $step"

    # The admin's one line: the shipped snippet (its cache= replaced by this cluster's topologies).
    line=$(grep -v '^#' /usr/share/gputopo/plugstack.conf | grep . | sed 's/ cache=[^ ]*//')
    plugstack_set_line "$line topology=$CLUSTER_DIR/topo/%n.xml"
    out=$(timeout 120 srun -w n1,n3 -N2 -n4 --ntasks-per-node=2 --gpus-per-task=1 --gpu-topo=closest,verbose \
        bash -c 'echo "T $SLURMD_NODENAME $GPUTOPO_GPUS"' 2>&1)
    rc=$?
    [ "$rc" -eq 0 ] && [ "$(echo "$out" | grep -c '^T n[13] [0-9]')" = 4 ] && [ "$(echo "$out" | grep -c '^gputopo: n[13] task')" = 4 ]
    result "the installed package's plugin ($line) binds a 2-node --gpu-topo step" $? "rc=$rc $out"
    cluster_stop
else
    result "local cluster for the installed package" 1 "cluster_start failed"
fi

dpkg -r gputopo > /tmp/dpkg.log 2>&1
[ ! -e "$so" ] && ! command -v gputopo >/dev/null && [ ! -e /usr/share/gputopo/python ]
result "dpkg -r removes the plugin, the CLI and the Python helper (with the bytecode an import left)" $? "$(tail -n 3 /tmp/dpkg.log)"
echo "# deb check: $fails failed"
[ "$fails" -eq 0 ]
