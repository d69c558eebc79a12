# shellcheck shell=bash
# A real Slurm cluster on loopback for gputopo's end-to-end tests. Source it.
#
# CONTRACT
#   . tests/cluster/harness.sh
#   cluster_start BUILD   start munged, slurmctld and 4 slurmd (n1..n4) in a fresh
#                         /tmp/gputopo-cluster.XXXXXX dir on free random ports;
#                         installs `trap cluster_stop EXIT INT TERM`. Returns non-zero
#                         (with the reason on stderr) when it cannot start.
#   cluster_stop          cancel jobs, stop only this run's daemons (by pid file), remove
#                         the dir (kept when GPUTOPO_KEEP_CLUSTER=1). Idempotent.
#   cluster_ensure BUILD  for a t_*.sh run on its own: start a cluster unless one is
#                         already running (CLUSTER_DIR exported by run.sh).
#   plugstack_set "ARGS"  rewrite plugstack.conf to `optional <BUILD>/gputopo.so ARGS`
#                         (srun and slurmstepd re-read it per step; slurmd is not restarted).
#   plugstack_set_line "LINE"  write LINE as the whole plugstack.conf ("" = no plugin).
#   plugstack_default     back to `topology=$CLUSTER_DIR/topo/%n.xml`.
#   node_topology NODE    the topology file node NODE uses (for `gputopo plan --topology`).
#   wait_job_state JOBID STATE [SECONDS]   poll squeue/scontrol until the job reaches STATE.
#   wait_restart_count JOBID SECONDS   until the job was requeued (RestartCnt >= 1).
#   job_field JOBID FIELD  the job's FIELD from `scontrol show job -o` (the job's own, not
#                         one its name poses as, nor Slurm 26.05's SubmitLine copy of it); Comment
#                         whole (spaces and all) from squeue while the job is listed.
#   tap_ok NAME / tap_not_ok NAME [WHY] / tap_check NAME CMD...   print "ok - NAME" / "not ok - NAME".
#   tap_plan N            first line of every t_*.sh: "# plan N", the cases it runs; run.sh
#                         counts every case missing from that (a script that died, skipped a
#                         print, or never started) as failed.
#   tap_count_results T LOG RC   (run.sh) "not ok" lines for cases missing from LOG.
#   with_timeout SECONDS CMD...   run CMD with a time limit (every srun/salloc in a test);
#                         exit 124 when it ran out.
#
# Exported after cluster_start: SLURM_CONF, CLUSTER_DIR, CLUSTER_BUILD (absolute), CLUSTER_SRC
# (the source tree), CLUSTER_PLUGIN (gputopo.so), CLUSTER_NODES ("n1 n2 n3 n4"; "s1 s2 s3"),
# CLUSTER_LAYOUT (mixed or sockets),
# CLUSTER_CTLD_PORT, CLUSTER_TOPOLOGY (tree or block), CLUSTER_TASK_CONFIG (cgroup or none),
# CLUSTER_CGROUP_VERSION (v1 or v2), PATH unchanged (Slurm's own
# srun/sbatch/... talk to this cluster via SLURM_CONF).
#
# The nodes (partition "debug", default; topology/tree: leaf1=n[1-2], leaf2=n[3-4], spine;
#   or topology/block b1=n[1-2], b2=n[3-4], below):
#   n1  this host: an NCCL-format topology generated at start with this host's real CPUs
#       (2 NVIDIA GPUs, 2 RDMA NICs mlx5_0/mlx5_1), so real affinity can be checked. gpu:2
#   n2  OCI BM.GPU.H100.8 NCCL dump, 8x H100, 2 sockets, 224 CPUs. gpu:h100:8
#   n3  LLNL Dell XE8640 hwloc XML, 4x H100 SXM5, SNC4, 224 CPUs.  gpu:h100:4
#   n4  LLNL Tioga hwloc XML, AMD MI250X (8 GCDs), 128 CPUs.      gpu:mi250x:8
#   GPU device files are character devices (mknod c 1 3) under $CLUSTER_DIR/dev/<node>/.
#
# Layout (GPUTOPO_CLUSTER_LAYOUT before cluster_start; exported as CLUSTER_LAYOUT):
#   mixed    (default) the four nodes above.
#   sockets  three nodes s1 s2 s3, each 8 NVIDIA GPUs on 2 sockets, one NUMA node per
#            socket, described on this host's first 2 CPUs (socket 0 = CPU 0, socket 1 =
#            CPU 1; slurm.conf Sockets=2 CoresPerSocket=1, gres.conf Cores= to match), so
#            the real affinity can be checked while the host has one NUMA node: the
#            topology's NUMA node 1 does not exist here. s1: GPUs 0-3 on socket 0, 4-7 on
#            socket 1, a NIC per 2 GPUs; s2: the GPU order reversed (0-3 on socket 1);
#            s3: as s1, but NICs only on socket 0. gpu:8 each; topology/tree leaf1=s[1-2],
#            leaf2=s3. sched/backfill (heterogeneous jobs). A second shape for the binding
#            tests (t_sockets.sh).
# GPUTOPO_CLUSTER_JOB_SUBMIT=0 (before cluster_start): no JobSubmitPlugins (a site without
# gputopo's job_submit.lua); default 1.
#
# Topology (GPUTOPO_CLUSTER_TOPOLOGY before cluster_start; exported as CLUSTER_TOPOLOGY):
#   tree   (default) TopologyPlugin=topology/tree, topology.conf leaf1=n[1-2], leaf2=n[3-4], spine.
#   block  TopologyPlugin=topology/block (Slurm 23.11+; 22.05 has no such plugin and slurmctld
#          does not start), topology.conf "BlockName=b1 Nodes=n[1-2]", "BlockName=b2
#          Nodes=n[3-4]", "BlockSizes=2,4": two NVL72-like racks of 2 nodes, planning base block 2.
#          GPUTOPO_CLUSTER_BLOCKS="b1=n[2,4] b2=n[1,3]" lists other blocks (BlockSizes=2,4 kept).
# GPUTOPO_CLUSTER_NODE_ADDRS=distinct (before cluster_start; mixed layout): node nN gets
#   NodeAddr=127.0.0.N (default: all 127.0.0.1), so what connects to a node's address can tell
#   the nodes apart.
# Extending slurm.conf (before cluster_start): every tests/cluster/conf.d/*.conf, then
# $GPUTOPO_EXTRA_SLURM_CONF (text), are appended to slurm.conf. In both, @CLUSTER_DIR@,
# @BUILD@ and @SRC@ are replaced by the run dir, the absolute build dir and the source tree.
# JobSubmitPlugins=lua with etc/job_submit.lua copied beside slurm.conf (unless
# GPUTOPO_CLUSTER_JOB_SUBMIT=0); JobRequeue=1.
# $GPUTOPO_FAKE_GPUS_CONF (text, same substitutions) becomes fake_gpus.conf beside slurm.conf:
# Slurm's gres/gpu then takes those GPUs (with their unique ids: CUDA_VISIBLE_DEVICES holds
# UUIDs, as with AutoDetect=nvml) instead of detecting (Slurm 22.05 gres_gpu.c
# _get_system_gpu_list_fake; not shipped in configless mode).
# GPUTOPO_CLUSTER_SLURMD_TIMEOUT (seconds, before cluster_start; default 300): slurm.conf's
# SlurmdTimeout, for a test that kills a slurmd and waits for slurmctld to see the node gone.
# At least 30 (cluster_start refuses less): slurmctld pings nodes in one forwarded message,
# and the connection to a dead slurmd is retried for min(MessageTimeout, 10) s before the
# live nodes' answers count, so with SlurmdTimeout 10 a live node pinged with the dead one
# was declared DOWN too (24.11, the batch host: the job ended).
# Logs: $CLUSTER_DIR/log/{slurmctld,slurmd-nN,munged}.log (printed by cluster_dump_logs).
# Two runs in parallel do not clash: own dir, own munged socket and key, own ports.
#
# Configless mode (GPUTOPO_CLUSTER_CONFIGLESS=1 before cluster_start): slurmctld runs with
# SlurmctldParameters=enable_configless and every slurmd with --conf-server and no config
# file (no -f, no SLURM_CONF): each fetches slurm.conf, gres.conf, topology.conf and
# plugstack.conf into its own $CLUSTER_DIR/spool/<node>/conf-cache. The plugin line lives
# in plugstack.conf itself (beside slurm.conf, no PlugStackConfig=), the configless way;
# plugstack_set/plugstack_set_line then push the new file with `scontrol reconfigure` and
# wait until every node's conf-cache has it. Exported: CLUSTER_CONFIGLESS=1.

_harness_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

_harness_need() {
    local missing="" b
    for b in munged mungekey munge unmunge slurmctld slurmd srun sbatch salloc scontrol squeue sinfo scancel python3; do
        command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing="$missing $b"
    done
    if [ -n "$missing" ]; then
        echo "harness: missing programs:$missing (run 'make test-deps' as root: slurmctld slurmd slurm-client munge python3)" >&2
        return 1
    fi
}

# _port_free PORT: nothing is bound to PORT (a listener, or a connection's local end:
# connecting to it would not see the latter, and slurmctld's bind would fail).
_port_free() {
    python3 -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("0.0.0.0", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1" 2>/dev/null
}

# Five consecutive free ports from a random base below the kernel's ephemeral range
# (ip_local_port_range), where no client socket of this or another run takes them.
_pick_ports() {
    local try base p ok low
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    case "$low" in '' | *[!0-9]*) low=32768 ;; esac
    [ "$low" -gt 21000 ] || low=61000
    for try in $(seq 1 50); do
        base=$((20000 + (RANDOM * 32768 + RANDOM) % (low - 20005)))
        ok=1
        for p in $(seq "$base" $((base + 4))); do
            _port_free "$p" || { ok=0; break; }
        done
        [ "$ok" = 1 ] && { echo "$base"; return 0; }
    done
    echo "harness: no free ports found" >&2
    return 1
}

# An NCCL-format topology of this host: its real CPUs (all on one NUMA node unless sysfs
# says otherwise), 2 fake NVIDIA GPUs joined by NVLink and 2 RDMA NICs, one per GPU.
_host_topology() {
    python3 - "$1" <<'EOF'
import os, sys
cpus = sorted(os.sched_getaffinity(0))
mask = 0
for c in cpus:
    mask |= 1 << c
words = []
while mask or not words:
    words.append("%08x" % (mask & 0xffffffff))
    mask >>= 32
aff = ",".join(reversed(words))
gpus = [("0000:17:00.0", "0000:18:00.0", "mlx5_0"), ("0000:3a:00.0", "0000:3b:00.0", "mlx5_1")]
out = ['<system version="1">',
       '  <cpu numaid="0" affinity="%s" arch="x86_64" vendor="GenuineIntel">' % aff]
for i, (gpu, nic, name) in enumerate(gpus):
    other = gpus[1 - i][0]
    out += ['    <pci busid="%s" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">' % gpu,
            '      <gpu dev="%d" sm="90" rank="%d" gdr="1">' % (i, i),
            '        <nvlink target="%s" count="18" tclass="0x030200"/>' % other,
            '      </gpu>',
            '    </pci>',
            '    <pci busid="%s" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">' % nic,
            '      <nic>',
            '        <net name="%s" dev="%d" speed="400000" port="1" latency="0" guid="0x%x" maxconn="131072" gdr="1"/>' % (name, i, i + 1),
            '      </nic>',
            '    </pci>']
out += ['  </cpu>', '</system>']
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF
}

# The sockets layout's node: an NCCL-format topology of 8 GPUs on 2 sockets, socket k
# on this host's CPU k (NUMA node k). $2: "reversed" puts the GPUs of the lower bus
# ids (CUDA's 0-3) on socket 1; $3: "half" puts NICs on socket 0 only.
_sockets_topology() {
    python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, order, nics = sys.argv[1:4]
buses = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb]   # GPU k's bus: CUDA's order
out = ['<system version="1">']
nic_no = 0
for sock in (0, 1):
    first = 4 * sock if order != "reversed" else 4 * (1 - sock)
    out.append('  <cpu numaid="%d" affinity="%08x" arch="x86_64" vendor="GenuineIntel">' % (sock, 1 << sock))
    for pair in (0, 2):
        sw = buses[first + pair] - 2
        out.append('    <pci busid="0000:%02x:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">' % sw)
        for k in (first + pair, first + pair + 1):
            out += ['      <pci busid="0000:%02x:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">' % buses[k],
                    '        <gpu dev="%d" sm="90" rank="%d" gdr="1"/>' % (k, k),
                    '      </pci>']
        if nics != "half" or sock == 0:
            out += ['      <pci busid="0000:%02x:00.0" class="0x020700" vendor="0x15b3" device="0x1021" link_speed="32.0 GT/s PCIe" link_width="16">' % (sw + 1),
                    '        <nic>',
                    '          <net name="mlx5_%d" dev="%d" speed="400000" port="1" latency="0" guid="0x%x" maxconn="131072" gdr="1"/>' % (nic_no, nic_no, nic_no + 1),
                    '        </nic>',
                    '      </pci>']
            nic_no += 1
        out.append('    </pci>')
    out.append('  </cpu>')
out.append('</system>')
open(path, "w").write("\n".join(out) + "\n")
EOF
}

node_topology() {
    echo "$CLUSTER_DIR/topo/$1.xml"
}

plugstack_set_line() {
    printf '%s\n' "$1" > "$CLUSTER_DIR/etc/plugstack.conf.tmp" && mv -f "$CLUSTER_DIR/etc/plugstack.conf.tmp" "$CLUSTER_DIR/etc/plugstack.conf"
    [ "${CLUSTER_CONFIGLESS:-0}" = 1 ] || return 0
    # Configless: the nodes see the new file only once slurmctld pushes it.
    cmp -s "$CLUSTER_DIR/etc/plugstack.conf" "$CLUSTER_DIR/etc/plugstack.conf.pushed" && return 0
    scontrol reconfigure >/dev/null 2>&1 || { echo "harness: scontrol reconfigure failed" >&2; return 1; }
    local i n ok
    for i in $(seq 1 150); do
        ok=1
        for n in $CLUSTER_NODES; do
            cmp -s "$CLUSTER_DIR/etc/plugstack.conf" "$CLUSTER_DIR/spool/$n/conf-cache/plugstack.conf" || ok=0
        done
        [ "$ok" = 1 ] && { cp "$CLUSTER_DIR/etc/plugstack.conf" "$CLUSTER_DIR/etc/plugstack.conf.pushed"; return 0; }
        sleep 0.2
    done
    echo "harness: the nodes' conf-cache did not get the new plugstack.conf" >&2
    return 1
}

plugstack_set() {
    plugstack_set_line "optional $CLUSTER_PLUGIN $*"
}

plugstack_default() {
    plugstack_set "topology=$CLUSTER_DIR/topo/%n.xml"
}

tap_plan() { echo "# plan $1"; }
tap_ok() { echo "ok - $1"; }
tap_not_ok() {
    echo "not ok - $1"
    [ $# -gt 1 ] && printf '#   %s\n' "${@:2}" >&2
    return 0
}
# tap_check NAME CMD...: ok when CMD succeeds.
tap_check() {
    local name=$1
    shift
    if "$@"; then tap_ok "$name"; else tap_not_ok "$name" "failed: $*"; fi
}

# tap_count_results T LOG RC: after script T wrote LOG and exited RC, the "not ok" lines
# for what LOG lacks against its "# plan N"; returns 1 when T failed in any way.
tap_count_results() {
    local t=$1 log=$2 rc=$3 plan ok notok missing
    plan=$(sed -n 's/^# plan \([0-9][0-9]*\)$/\1/p' "$log" | head -n 1)
    ok=$(grep -c '^ok - ' "$log")
    notok=$(grep -c '^not ok - ' "$log")
    if [ -z "$plan" ]; then
        echo "not ok - $t: no '# plan N' line (exit $rc, $ok ok, $notok not ok)"
        return 1
    fi
    missing=$((plan - ok - notok))
    if [ "$missing" -gt 0 ]; then
        local i
        for i in $(seq 1 "$missing"); do echo "not ok - $t: case missing ($i of $missing; plan $plan, exit $rc)"; done
        return 1
    fi
    if [ "$missing" -lt 0 ]; then
        echo "not ok - $t: $((ok + notok)) results for a plan of $plan"
        return 1
    fi
    if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
        echo "not ok - $t: exit $rc with every case ok"
        return 1
    fi
    [ "$notok" -eq 0 ]
}

with_timeout() {
    local secs=$1
    shift
    timeout --kill-after=5 "$secs" "$@"
}

job_field() {
    # The Comment may hold spaces (the user's text, job_submit.lua's gputopo:requeue=asked and
    # gputopo's exclusion record): read whole from squeue while the job is listed there.
    if [ "$2" = Comment ]; then
        local c
        c=$(squeue -h -j "$1" -O 'Comment:|' 2>/dev/null | head -n 1)
        if [ -n "$c" ]; then printf '%s\n' "${c%|}"; return; fi
    fi
    # A job's own fields come after its name; SubmitLine (26.05) repeats the name and the typed
    # options, up to WorkDir=, which is always next; Comment, SegmentSize, Switches... follow it.
    scontrol show job -o "$1" 2>/dev/null | sed 's/ SubmitLine=.* WorkDir=/ WorkDir=/' | grep -o " $2=[^ ]*" | tail -n 1 | cut -d= -f2-
}

wait_lines() {  # FILE N SECONDS: until FILE has N lines (1 after SECONDS)
    local i
    for i in $(seq 1 $(($3 * 10))); do
        [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

wait_restart_count() {  # JOBID SECONDS: until the job's RestartCnt is 1 or more (1 after SECONDS)
    local i n
    for i in $(seq 1 $(($2 * 5))); do
        n=$(squeue -h -j "$1" -O 'RestartCnt:|' 2>/dev/null | tr -d '|')
        [ -n "$n" ] && [ "$n" -ge 1 ] && return 0
        sleep 0.2
    done
    return 1
}

wait_job_state() {
    local job=$1 want=$2 secs=${3:-30} i st
    for i in $(seq 1 $((secs * 5))); do
        st=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1)
        [ "$st" = "$want" ] && return 0
        sleep 0.2
    done
    echo "harness: job $job is ${st:-gone}, expected $want after ${secs}s" >&2
    return 1
}

cluster_dump_logs() {
    local f
    for f in "$CLUSTER_DIR"/log/*.log; do
        [ -f "$f" ] || continue
        echo "----- $f (last 30 lines)" >&2
        tail -n 30 "$f" >&2
    done
}

_harness_subst() {
    sed -e "s|@CLUSTER_DIR@|$CLUSTER_DIR|g" -e "s|@BUILD@|$CLUSTER_BUILD|g" -e "s|@SRC@|$_harness_src|g"
}

# The Slurm configuration the cluster runs (CLUSTER_TASK_CONFIG):
#   cgroup  TaskPlugin=task/affinity,task/cgroup, ProctrackType=proctrack/cgroup,
#           SelectTypeParameters=CR_Core_Memory and a cgroup.conf with CgroupPlugin=cgroup/v1,
#           ConstrainCores, ConstrainDevices and ConstrainRAMSpace: what production sites run.
#           Each run gets cgroups of its own: a directory gputopo-<run> under every v1
#           controller, mounted from a cgroup namespace rooted there at
#           $CLUSTER_DIR/cgroup/<controller> (CgroupMountpoint), the daemons in that cgroup
#           namespace (unshare -C), so Slurm's slurm_<node> roots of two runs never meet.
#           Unmounted and removed at cluster_stop.
#   none    TaskPlugin=task/none, ProctrackType=proctrack/linuxproc, CR_Core.
# GPUTOPO_CLUSTER_CGROUP=auto (default: cgroup where the kernel has the v1 cpuset, memory,
# devices and freezer controllers, else none with one line saying why), 1 (cgroup or fail),
# 0 (none), v2-devices (cgroup with Slurm's cgroup/v2 plugin, below, or fail).
#   v2-devices  the same TaskPlugin/ProctrackType, cgroup.conf CgroupPlugin=cgroup/v2
#           IgnoreSystemd=yes ConstrainDevices=yes (BPF device programs per step and task),
#           ConstrainCores=no ConstrainRAMSpace=no: a hybrid host keeps cpuset and memory on
#           v1, so cores are bound by task/affinity alone and memory is not constrained.
#           The run's own cgroup2 directory gputopo-<run> (under the host's cgroup2 mount),
#           mounted from a cgroup namespace rooted there at $CLUSTER_DIR/cgroup2
#           (CgroupMountpoint). Slurm refuses a hybrid host at start (it reads
#           /proc/<pid>/cgroup, which lists the v1 hierarchies too): the daemons, and only
#           they, preload cgroup_v2_view.c (built at start), which shows them the "0::" line
#           alone. Exported: CLUSTER_CGROUP_VERSION=v2 (v1 for the cgroup configuration
#           above); CLUSTER_TASK_CONFIG is cgroup in both.
_harness_cgroup_controllers="cpuset memory devices freezer"

# Why the cgroup configuration cannot run here ("" when it can).
_harness_cgroup_unavailable() {
    local c
    for c in $_harness_cgroup_controllers; do
        awk -v c="$c" '$3 == "cgroup" && (","$4",") ~ (","c",") {found=1} END {exit !found}' /proc/mounts ||
            { echo "no cgroup v1 '$c' controller is mounted"; return 0; }
    done
    command -v unshare >/dev/null 2>&1 || { echo "unshare (util-linux) is missing"; return 0; }
    [ "$(id -u)" = 0 ] || { echo "not root"; return 0; }
    unshare -C true 2>/dev/null || { echo "cgroup namespaces are not available (unshare -C failed)"; return 0; }
    echo ""
}

# The host's cgroup2 mount ("" when none).
_harness_cgroup2_root() { awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts; }

# Why the cgroup/v2 device configuration cannot run here ("" when it can).
_harness_cgroup_v2_unavailable() {
    [ -n "$(_harness_cgroup2_root)" ] || { echo "no cgroup2 hierarchy is mounted"; return 0; }
    command -v unshare >/dev/null 2>&1 || { echo "unshare (util-linux) is missing"; return 0; }
    command -v gcc >/dev/null 2>&1 || { echo "gcc is missing (the daemons' /proc/<pid>/cgroup view is built at start)"; return 0; }
    [ "$(id -u)" = 0 ] || { echo "not root"; return 0; }
    unshare -C true 2>/dev/null || { echo "cgroup namespaces are not available (unshare -C failed)"; return 0; }
    echo ""
}

_harness_choose_task_config() {
    local want=${GPUTOPO_CLUSTER_CGROUP:-auto} why
    CLUSTER_CGROUP_VERSION=v1
    case "$want" in
    0|none) CLUSTER_TASK_CONFIG=none ;;
    v2-devices)
        why=$(_harness_cgroup_v2_unavailable)
        [ -z "$why" ] || { echo "harness: GPUTOPO_CLUSTER_CGROUP=$want but $why" >&2; return 1; }
        CLUSTER_TASK_CONFIG=cgroup
        CLUSTER_CGROUP_VERSION=v2 ;;
    1|cgroup|auto)
        why=$(_harness_cgroup_unavailable)
        if [ -z "$why" ]; then
            CLUSTER_TASK_CONFIG=cgroup
        elif [ "$want" = auto ]; then
            echo "# harness: the cgroup configuration cannot run here ($why): running task/none + proctrack/linuxproc" >&2
            CLUSTER_TASK_CONFIG=none
        else
            echo "harness: GPUTOPO_CLUSTER_CGROUP=$want but $why" >&2
            return 1
        fi ;;
    *) echo "harness: GPUTOPO_CLUSTER_CGROUP='$want' (expected auto, 1, 0 or v2-devices)" >&2; return 1 ;;
    esac
    export CLUSTER_TASK_CONFIG CLUSTER_CGROUP_VERSION
}

# One line that says which Slurm configuration runs, for the logs.
cluster_config_line() {
    if [ "$CLUSTER_TASK_CONFIG" = cgroup ] && [ "$CLUSTER_CGROUP_VERSION" = v2 ]; then
        echo "TaskPlugin=task/affinity,task/cgroup ProctrackType=proctrack/cgroup CgroupPlugin=cgroup/v2 IgnoreSystemd=yes ConstrainCores=no ConstrainDevices=yes ConstrainRAMSpace=no CR_Core_Memory (hybrid host: daemons see the 0:: line alone)"
    elif [ "$CLUSTER_TASK_CONFIG" = cgroup ]; then
        echo "TaskPlugin=task/affinity,task/cgroup ProctrackType=proctrack/cgroup CgroupPlugin=cgroup/v1 ConstrainCores=yes ConstrainDevices=yes ConstrainRAMSpace=yes CR_Core_Memory"
    else
        echo "TaskPlugin=task/none ProctrackType=proctrack/linuxproc CR_Core"
    fi
}

_harness_task_conf() {
    if [ "$CLUSTER_TASK_CONFIG" = cgroup ]; then
        printf '%s\n' "ProctrackType=proctrack/cgroup" "TaskPlugin=task/affinity,task/cgroup" \
            "SelectTypeParameters=CR_Core_Memory" "DefMemPerCPU=1024"
    else
        printf '%s\n' "ProctrackType=proctrack/linuxproc" "TaskPlugin=task/none" "SelectTypeParameters=CR_Core"
    fi
}

_harness_cgroup_name() { echo "gputopo-$(basename "$CLUSTER_DIR")"; }

# The run's own cgroup under every controller (cpuset needs cpus and mems before use),
# and cgroup.conf beside slurm.conf.
_harness_cgroup_create() {
    local c dir=/sys/fs/cgroup name
    name=$(_harness_cgroup_name)
    [ "$CLUSTER_CGROUP_VERSION" = v2 ] && { _harness_cgroup_v2_create; return; }
    for c in $_harness_cgroup_controllers; do
        mkdir -p "$dir/$c/$name" "$CLUSTER_DIR/cgroup/$c" || return 1
    done
    cat "$dir/cpuset/cpuset.cpus" > "$dir/cpuset/$name/cpuset.cpus" &&
    cat "$dir/cpuset/cpuset.mems" > "$dir/cpuset/$name/cpuset.mems" || return 1
    # ConstrainDevices spelled as Slurm's parse_config.c also takes it (spaces around '=', a
    # quoted value): the plugin and the launcher must read it as Slurm does (issue 33, finding 7).
    printf '%s\n' "CgroupPlugin=cgroup/v1" "CgroupMountpoint=$CLUSTER_DIR/cgroup" "ConstrainCores=yes" \
        'ConstrainDevices = "yes"' "ConstrainRAMSpace=yes" > "$CLUSTER_DIR/etc/cgroup.conf"
}

# cgroup/v2: the run's cgroup2 directory, the daemons' view of /proc/<pid>/cgroup, cgroup.conf.
_harness_cgroup_v2_create() {
    local root auto
    root=$(_harness_cgroup2_root)
    mkdir -p "$root/$(_harness_cgroup_name)" "$CLUSTER_DIR/cgroup2" || return 1
    gcc -O2 -Wall -shared -fPIC -o "$CLUSTER_DIR/cgroup_v2_view.so" "$_harness_src/tests/cluster/cgroup_v2_view.c" -ldl ||
        { echo "harness: could not build cgroup_v2_view.so" >&2; return 1; }
    # 22.05 mounts and enables controllers with CgroupAutomount; 23.02+ calls it defunct and
    # has EnableControllers.
    auto="EnableControllers=yes"
    case "$("$(command -v slurmd || echo /usr/sbin/slurmd)" -V 2>/dev/null | awk '{print $2}')" in 2[0-2].*) auto="CgroupAutomount=yes" ;; esac
    printf '%s\n' "CgroupPlugin=cgroup/v2" "CgroupMountpoint=$CLUSTER_DIR/cgroup2" "IgnoreSystemd=yes" "$auto" \
        "ConstrainCores=no" "ConstrainDevices=yes" "ConstrainRAMSpace=no" > "$CLUSTER_DIR/etc/cgroup.conf"
}

# Removes the run's cgroups, deepest first, once no process is left in them.
_harness_cgroup_remove() {
    local c dir=/sys/fs/cgroup name i
    name=$(_harness_cgroup_name)
    if [ "$CLUSTER_CGROUP_VERSION" = v2 ]; then
        dir=$(_harness_cgroup2_root)
        mountpoint -q "$CLUSTER_DIR/cgroup2" 2>/dev/null && umount "$CLUSTER_DIR/cgroup2" 2>/dev/null
        for i in $(seq 1 50); do
            find "$dir/$name" -depth -type d -exec rmdir {} \; 2>/dev/null
            [ -d "$dir/$name" ] || return 0
            sleep 0.1
        done
        echo "harness: could not remove $dir/$name (processes left in it?)" >&2
        return 0
    fi
    for c in $_harness_cgroup_controllers; do
        mountpoint -q "$CLUSTER_DIR/cgroup/$c" 2>/dev/null && umount "$CLUSTER_DIR/cgroup/$c" 2>/dev/null
    done
    for c in $_harness_cgroup_controllers; do
        [ -d "$dir/$c/$name" ] || continue
        for i in $(seq 1 50); do
            find "$dir/$c/$name" -depth -type d -exec rmdir {} \; 2>/dev/null
            [ -d "$dir/$c/$name" ] || break
            sleep 0.1
        done
        [ -d "$dir/$c/$name" ] && echo "harness: could not remove $dir/$c/$name (processes left in it?)" >&2
    done
    return 0
}

# cluster_daemon CMD...: runs CMD (a daemon) in this run's cgroups, seen through a cgroup
# namespace rooted there (cgroup configuration); otherwise as it is. The daemons share the
# host's mount namespace, so what a test mounts later (a full or read-only tmpfs) is theirs too.
cluster_daemon() {
    if [ "${CLUSTER_TASK_CONFIG:-none}" != cgroup ]; then
        "$@"
        return
    fi
    if [ "$CLUSTER_CGROUP_VERSION" = v2 ]; then
        GPUTOPO_CG_DIR=$(_harness_cgroup2_root)/$(_harness_cgroup_name) sh -c '
            echo $$ > "$GPUTOPO_CG_DIR/cgroup.procs" || exit 1
            unset GPUTOPO_CG_DIR
            exec unshare -C "$@"' sh env LD_PRELOAD="$CLUSTER_DIR/cgroup_v2_view.so" "$@"
        return
    fi
    GPUTOPO_CG_NAME=$(_harness_cgroup_name) GPUTOPO_CG_CTRL=$_harness_cgroup_controllers sh -c '
        for c in $GPUTOPO_CG_CTRL; do echo $$ > "/sys/fs/cgroup/$c/$GPUTOPO_CG_NAME/cgroup.procs" || exit 1; done
        unset GPUTOPO_CG_NAME GPUTOPO_CG_CTRL
        exec unshare -C "$@"' sh "$@"
}

# The run's controllers mounted at $CLUSTER_DIR/cgroup/<controller> (CgroupMountpoint) from
# inside a cgroup namespace rooted at the run's cgroups: Slurm's slurm_<node> roots land
# under /sys/fs/cgroup/<controller>/gputopo-<run>.
_harness_cgroup_mount() {
    if [ "$CLUSTER_CGROUP_VERSION" = v2 ]; then
        # 22.05 wants the stepd scopes' parent before slurmd starts.
        cluster_daemon sh -c 'mount -t cgroup2 none "$1" && mkdir -p "$1/system.slice"' sh "$CLUSTER_DIR/cgroup2"
        return
    fi
    cluster_daemon sh -c 'for c in '"$_harness_cgroup_controllers"'; do
        mount -t cgroup -o "$c" cgroup "$1/$c" || exit 1; done' sh "$CLUSTER_DIR/cgroup"
}

# cluster_in_slurmd_ns "SHELL COMMANDS": in configless mode each slurmd runs in a private mount
# namespace (for munge's default socket), which no mount made later on the host reaches (and
# no bind mount can cross): run the commands (a test's own mount) in each slurmd's namespace too.
cluster_in_slurmd_ns() {
    [ "${CLUSTER_CONFIGLESS:-0}" = 1 ] || return 0
    local f pid
    for f in "$CLUSTER_DIR"/run/slurmd-*.pid; do
        pid=$(cat "$f" 2>/dev/null) || continue
        [ -n "$pid" ] && nsenter -t "$pid" -m sh -c "$1" ||
            { echo "harness: '$1' failed in slurmd $pid's mount namespace" >&2; return 1; }
    done
}

# cluster_start_slurmd NODE: starts slurmd for NODE the way cluster_start does (also to
# restart one a test stopped).
cluster_start_slurmd() {
    local n=$1
    if [ "$CLUSTER_CONFIGLESS" = 1 ]; then
        # No config file for slurmd: everything comes from slurmctld. Before it
        # has slurm.conf, slurmd authenticates through munge's default socket:
        # in a mount namespace of its own, /run/munge shows this run's socket.
        mkdir -p /run/munge "$CLUSTER_DIR/munge-default" &&
        ln -sf "$CLUSTER_DIR/munge/munge.socket" "$CLUSTER_DIR/munge-default/munge.socket.2" &&
        (unset SLURM_CONF; cluster_daemon unshare -m --propagation private sh -c \
            'mount --bind "$1" /run/munge && exec slurmd --conf-server "$2" -N "$3"' \
            sh "$CLUSTER_DIR/munge-default" "127.0.0.1:$CLUSTER_CTLD_PORT" "$n")
    else
        cluster_daemon slurmd -f "$SLURM_CONF" -N "$n"
    fi
}

# NodeAddr of node N (mixed layout): 127.0.0.1, or 127.0.0.N with GPUTOPO_CLUSTER_NODE_ADDRS=distinct.
_harness_node_addr() {
    if [ "${GPUTOPO_CLUSTER_NODE_ADDRS:-same}" = distinct ]; then echo "127.0.0.$1"; else echo 127.0.0.1; fi
}

# slurm.conf's node and partition lines for the layout (BASE: slurmctld's port; NCPU: this
# host's CPUs).
_harness_node_lines() {
    local base=$1 ncpu=$2 i
    if [ "$CLUSTER_LAYOUT" = sockets ]; then
        for i in 1 2 3; do
            echo "NodeName=s$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=2 Sockets=2 CoresPerSocket=1 ThreadsPerCore=1 RealMemory=250000 Gres=gpu:8"
        done
        echo "PartitionName=debug Nodes=s[1-3] Default=YES MaxTime=INFINITE State=UP"
        return
    fi
    cat <<EOF
NodeName=n1 NodeHostname=localhost NodeAddr=$(_harness_node_addr 1) Port=$((base + 1)) CPUs=$ncpu Sockets=1 CoresPerSocket=$ncpu ThreadsPerCore=1 RealMemory=250000 Gres=gpu:2
NodeName=n2 NodeHostname=localhost NodeAddr=$(_harness_node_addr 2) Port=$((base + 2)) CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=250000 Gres=gpu:h100:8
NodeName=n3 NodeHostname=localhost NodeAddr=$(_harness_node_addr 3) Port=$((base + 3)) CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=250000 Gres=gpu:h100:4
NodeName=n4 NodeHostname=localhost NodeAddr=$(_harness_node_addr 4) Port=$((base + 4)) CPUs=128 Sockets=1 CoresPerSocket=64 ThreadsPerCore=2 RealMemory=250000 Gres=gpu:mi250x:8
PartitionName=debug Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP
EOF
}

# The scheduler: sched/builtin; the sockets layout runs heterogeneous jobs, which only
# sched/backfill starts (sched/builtin refuses them: "Requested operation not supported on
# this system"), every second.
_harness_scheduler() {
    if [ "$CLUSTER_LAYOUT" = sockets ]; then
        printf '%s\n' "SchedulerType=sched/backfill" "SchedulerParameters=bf_interval=1"
    else
        echo "SchedulerType=sched/builtin"
    fi
}

# gres.conf for the layout. sockets: each GPU's Cores= is the socket its topology puts it on.
_harness_gres_lines() {
    local d=$CLUSTER_DIR
    if [ "$CLUSTER_LAYOUT" = sockets ]; then
        printf '%s\n' "NodeName=s1 Name=gpu File=$d/dev/s1/nvidia[0-3] Cores=0" \
            "NodeName=s1 Name=gpu File=$d/dev/s1/nvidia[4-7] Cores=1" \
            "NodeName=s2 Name=gpu File=$d/dev/s2/nvidia[0-3] Cores=1" \
            "NodeName=s2 Name=gpu File=$d/dev/s2/nvidia[4-7] Cores=0" \
            "NodeName=s3 Name=gpu File=$d/dev/s3/nvidia[0-3] Cores=0" \
            "NodeName=s3 Name=gpu File=$d/dev/s3/nvidia[4-7] Cores=1"
        return
    fi
    cat <<EOF
NodeName=n1 Name=gpu File=$d/dev/n1/nvidia[0-1]
NodeName=n2 Name=gpu Type=h100 File=$d/dev/n2/nvidia[0-7]
NodeName=n3 Name=gpu Type=h100 File=$d/dev/n3/nvidia[0-3]
NodeName=n4 Name=gpu Type=mi250x File=$d/dev/n4/renderD[128-135]
EOF
}

_harness_write_conf() {
    local base=$1 d=$CLUSTER_DIR ncpu
    ncpu=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
    cat > "$d/etc/slurm.conf" <<EOF
ClusterName=gputopo$$
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$base
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
$(_harness_task_conf)
SelectType=select/cons_tres
SlurmdParameters=config_overrides
$(_harness_scheduler)
GresTypes=gpu
TopologyPlugin=topology/$CLUSTER_TOPOLOGY
JobRequeue=1
$([ "${GPUTOPO_CLUSTER_JOB_SUBMIT:-1}" = 0 ] || echo JobSubmitPlugins=lua)
$([ "${CLUSTER_CONFIGLESS:-0}" = 1 ] && echo SlurmctldParameters=enable_configless || echo "PlugStackConfig=$d/etc/plugstack.conf")
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
KillWait=5
MinJobAge=300
MailProg=/bin/true
MessageTimeout=$_harness_msg_timeout
SlurmdTimeout=${GPUTOPO_CLUSTER_SLURMD_TIMEOUT:-300}
PropagateResourceLimitsExcept=ALL
$(_harness_node_lines "$base" "$ncpu")
EOF
    local f
    for f in "$_harness_src"/tests/cluster/conf.d/*.conf; do
        [ -f "$f" ] || continue
        { echo "# from $f"; _harness_subst < "$f"; } >> "$d/etc/slurm.conf"
    done
    if [ -n "${GPUTOPO_EXTRA_SLURM_CONF:-}" ]; then
        { echo "# from GPUTOPO_EXTRA_SLURM_CONF"; printf '%s\n' "$GPUTOPO_EXTRA_SLURM_CONF" | _harness_subst; } >> "$d/etc/slurm.conf"
    fi
    _harness_gres_lines > "$d/etc/gres.conf"
    if [ "$CLUSTER_LAYOUT" = sockets ]; then
        printf '%s\n' "SwitchName=leaf1 Nodes=s[1-2]" "SwitchName=leaf2 Nodes=s3" "SwitchName=spine Switches=leaf[1-2]" \
            > "$d/etc/topology.conf"
    elif [ "$CLUSTER_TOPOLOGY" = block ] && [ -n "${GPUTOPO_CLUSTER_BLOCKS:-}" ]; then
        tr -s ' ' '\n' <<< "$GPUTOPO_CLUSTER_BLOCKS" | grep . | sed 's/^\([^=]*\)=\(.*\)$/BlockName=\1 Nodes=\2/' > "$d/etc/topology.conf"
        echo "BlockSizes=2,4" >> "$d/etc/topology.conf"
    elif [ "$CLUSTER_TOPOLOGY" = block ]; then
        printf '%s\n' "BlockName=b1 Nodes=n[1-2]" "BlockName=b2 Nodes=n[3-4]" "BlockSizes=2,4" > "$d/etc/topology.conf"
    else
        cat > "$d/etc/topology.conf" <<EOF
SwitchName=leaf1 Nodes=n[1-2]
SwitchName=leaf2 Nodes=n[3-4]
SwitchName=spine Switches=leaf[1-2]
EOF
    fi
    [ "${GPUTOPO_CLUSTER_JOB_SUBMIT:-1}" = 0 ] || cp "$_harness_src/etc/job_submit.lua" "$d/etc/job_submit.lua"
    if [ -n "${GPUTOPO_FAKE_GPUS_CONF:-}" ]; then
        printf '%s\n' "$GPUTOPO_FAKE_GPUS_CONF" | _harness_subst > "$d/etc/fake_gpus.conf"
    fi
}

# One character device per GPU, as a real node has: NVIDIA's major 195 (minor = the GPU),
# DRM render nodes 226:128+ for the AMD GCDs. The devices cgroup tells GPUs apart only by
# major:minor (ConstrainDevices); the nodes share the host, so n1's nvidia0 and n2's nvidia0
# are one device, which no test depends on.
_harness_devices() {
    local d=$CLUSTER_DIR i n
    if [ "$CLUSTER_LAYOUT" = sockets ]; then
        for n in $CLUSTER_NODES; do
            mkdir -p "$d/dev/$n"
            for i in 0 1 2 3 4 5 6 7; do mknod "$d/dev/$n/nvidia$i" c 195 "$i"; done
        done
        chmod 0666 "$d"/dev/s*/*
        return
    fi
    mkdir -p "$d/dev/n1" "$d/dev/n2" "$d/dev/n3" "$d/dev/n4"
    for i in 0 1; do mknod "$d/dev/n1/nvidia$i" c 195 "$i"; done
    for i in 0 1 2 3 4 5 6 7; do mknod "$d/dev/n2/nvidia$i" c 195 "$i"; done
    for i in 0 1 2 3; do mknod "$d/dev/n3/nvidia$i" c 195 "$i"; done
    for i in 128 129 130 131 132 133 134 135; do mknod "$d/dev/n4/renderD$i" c 226 "$i"; done
    chmod 0666 "$d"/dev/n*/*
}

_harness_topologies() {
    local t=$CLUSTER_DIR/topo f=$_harness_src/tests/fixtures/topologies
    if [ "$CLUSTER_LAYOUT" = sockets ]; then
        _sockets_topology "$t/s1.xml" normal all && _sockets_topology "$t/s2.xml" reversed all &&
            _sockets_topology "$t/s3.xml" normal half
        return
    fi
    _host_topology "$t/n1.xml" || return 1
    cp "$f"/nccl/oci-BM.GPU.H100.8_8xH100-SXM5_8xCX7-dualport_2xXeon8480+_nccl-dump.xml "$t/n2.xml" &&
    cp "$f"/hwloc/llnl-dell-xe8640_2xXeon8480+-SNC4_4xH100-SXM5_4xIB-CX7+CX6_NVLinkBW_hwloc2.12.xml "$t/n3.xml" &&
    cp "$f"/hwloc/llnl-tioga_hpe-cray-ex235a_1xEPYC7A53_4xMI250X-8GCD_4xSlingshot_XGMI_hwloc2.xml "$t/n4.xml"
}

_harness_start_munge() {
    local m=$CLUSTER_DIR/munge i
    mkdir -p "$m" && chmod 0755 "$m"
    mungekey -c -k "$m/munge.key" >/dev/null 2>&1 || { echo "harness: mungekey failed" >&2; return 1; }
    munged -f --socket="$m/munge.socket" --key-file="$m/munge.key" --pid-file="$m/munged.pid" \
        --log-file="$CLUSTER_DIR/log/munged.log" --seed-file="$m/munged.seed" ||
        { echo "harness: munged failed to start" >&2; return 1; }
    for i in $(seq 1 50); do
        munge -n -S "$m/munge.socket" 2>/dev/null | unmunge -S "$m/munge.socket" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "harness: munged does not answer on $m/munge.socket" >&2
    return 1
}

cluster_start() {
    local build=${1:-${CLUSTER_BUILD:-build}} base n i state
    _harness_need || return 1
    CLUSTER_BUILD=$(cd "$build" 2>/dev/null && pwd) || { echo "harness: no build dir '$build'" >&2; return 1; }
    CLUSTER_PLUGIN=$CLUSTER_BUILD/gputopo.so
    [ -f "$CLUSTER_PLUGIN" ] || { echo "harness: $CLUSTER_PLUGIN is missing (make all)" >&2; return 1; }
    CLUSTER_SRC=$_harness_src
    CLUSTER_LAYOUT=${GPUTOPO_CLUSTER_LAYOUT:-mixed}
    case "$CLUSTER_LAYOUT" in
    mixed) CLUSTER_NODES="n1 n2 n3 n4" ;;
    sockets) CLUSTER_NODES="s1 s2 s3" ;;
    *) echo "harness: GPUTOPO_CLUSTER_LAYOUT='$CLUSTER_LAYOUT' (expected mixed or sockets)" >&2; return 1 ;;
    esac
    export CLUSTER_LAYOUT
    CLUSTER_CONFIGLESS=${GPUTOPO_CLUSTER_CONFIGLESS:-0}
    CLUSTER_TOPOLOGY=${GPUTOPO_CLUSTER_TOPOLOGY:-tree}
    case "$CLUSTER_TOPOLOGY" in
    tree|block) ;;
    *) echo "harness: GPUTOPO_CLUSTER_TOPOLOGY='$CLUSTER_TOPOLOGY' (expected tree or block)" >&2; return 1 ;;
    esac
    _harness_msg_timeout=20
    local sd=${GPUTOPO_CLUSTER_SLURMD_TIMEOUT:-300} retry=$(( _harness_msg_timeout < 10 ? _harness_msg_timeout : 10 ))
    case "$sd" in ''|*[!0-9]*) echo "harness: GPUTOPO_CLUSTER_SLURMD_TIMEOUT='$sd' (expected seconds)" >&2; return 1 ;; esac
    if [ "$sd" -lt $(( 3 * retry )) ]; then
        echo "harness: GPUTOPO_CLUSTER_SLURMD_TIMEOUT=$sd is too short (expected at least $(( 3 * retry ))): slurmctld's ping of a dead slurmd holds the answers of the live nodes pinged with it for min(MessageTimeout=$_harness_msg_timeout, 10) s" >&2
        return 1
    fi
    export CLUSTER_CONFIGLESS CLUSTER_TOPOLOGY
    CLUSTER_DIR=$(mktemp -d /tmp/gputopo-cluster.XXXXXX) || return 1
    chmod 0755 "$CLUSTER_DIR"
    export CLUSTER_DIR CLUSTER_BUILD CLUSTER_PLUGIN CLUSTER_SRC CLUSTER_NODES
    export SLURM_CONF=$CLUSTER_DIR/etc/slurm.conf
    trap cluster_stop EXIT INT TERM
    mkdir -p "$CLUSTER_DIR"/{etc,state,run,log,topo,cache,tmp}
    for n in $CLUSTER_NODES; do mkdir -p "$CLUSTER_DIR/spool/$n"; done
    _harness_topologies || { echo "harness: could not write topologies" >&2; return 1; }
    _harness_devices || { echo "harness: mknod failed (run as root)" >&2; return 1; }
    _harness_choose_task_config || return 1
    if [ "$CLUSTER_TASK_CONFIG" = cgroup ]; then
        { _harness_cgroup_create && _harness_cgroup_mount; } ||
            { echo "harness: could not create or mount this run's cgroups" >&2; return 1; }
    fi
    _harness_start_munge || return 1
    # Ports: picked under a lock and held until the daemons have bound them, so
    # two runs starting together cannot pick the same ones.
    exec {_harness_lock}>/tmp/gputopo-cluster-ports.lock
    flock -w 60 "$_harness_lock" || true
    base=$(_pick_ports) || { flock -u "$_harness_lock"; return 1; }
    CLUSTER_CTLD_PORT=$base
    export CLUSTER_CTLD_PORT
    _harness_write_conf "$base"
    CLUSTER_CONFIGLESS=0 plugstack_default  # nodes fetch it at start in configless mode
    cluster_daemon slurmctld -f "$SLURM_CONF" -i ||
        { flock -u "$_harness_lock"; echo "harness: slurmctld failed" >&2; cluster_dump_logs; return 1; }
    for n in $CLUSTER_NODES; do
        cluster_start_slurmd "$n" ||
            { flock -u "$_harness_lock"; echo "harness: slurmd $n failed" >&2; cluster_dump_logs; return 1; }
    done
    local deadline=$((SECONDS + 60)) want  # wall clock: sinfo to a controller that died can take seconds
    want=$(echo $CLUSTER_NODES | wc -w)
    while [ "$SECONDS" -lt "$deadline" ]; do
        state=$(timeout 10 sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | awk '$2 == "idle"' | wc -l)
        [ "$state" -ge "$want" ] && break
        sleep 0.2
    done
    flock -u "$_harness_lock"
    exec {_harness_lock}>&-
    cp "$CLUSTER_DIR/etc/plugstack.conf" "$CLUSTER_DIR/etc/plugstack.conf.pushed"
    if [ "${state:-0}" -lt "$want" ]; then
        echo "harness: nodes did not become idle:" >&2
        sinfo -N >&2 2>&1
        cluster_dump_logs
        return 1
    fi
    return 0
}

cluster_ensure() {
    if [ -n "${CLUSTER_DIR:-}" ] && [ -f "${SLURM_CONF:-}" ]; then
        CLUSTER_PLUGIN=${CLUSTER_PLUGIN:-$CLUSTER_BUILD/gputopo.so}
        return 0
    fi
    cluster_start "$@"
}

_harness_kill_pidfile() {
    local f=$1 pid i
    [ -f "$f" ] || return 0
    pid=$(cat "$f" 2>/dev/null)
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

cluster_stop() {
    [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR" ] || return 0
    trap - EXIT INT TERM
    scancel --quiet --full -u root 2>/dev/null || true
    local f
    for f in "$CLUSTER_DIR"/run/slurmd-*.pid; do _harness_kill_pidfile "$f"; done
    _harness_kill_pidfile "$CLUSTER_DIR/run/slurmctld.pid"
    _harness_kill_pidfile "$CLUSTER_DIR/munge/munged.pid"
    [ "${CLUSTER_TASK_CONFIG:-none}" = cgroup ] && _harness_cgroup_remove
    if [ "${GPUTOPO_KEEP_CLUSTER:-0}" = 1 ]; then
        echo "harness: kept $CLUSTER_DIR" >&2
    else
        rm -rf "$CLUSTER_DIR"
    fi
    CLUSTER_DIR=
}
