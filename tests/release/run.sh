#!/usr/bin/env bash
# Builds and tests gputopo against another Slurm release, on real daemons, in a
# Debian root made with debootstrap.
#
#   tests/release/run.sh SUITE [full|v2|deb, comma-separated] [TESTS...]
#     SUITE  trixie (Debian 13, Slurm 24.11) or forky (Debian testing, Slurm 26.05)
#     full   (default) build, then the cluster tests (tests/run_tests.sh --cluster-only) on a
#            local cluster inside the root; only TESTS (t_*.sh names) when given, e.g.
#            t_plugin_release.sh alone: the release loads the plugin and binds a 2-node step
#     v2     the cluster tests in $GPUTOPO_RELEASE_V2_TESTS (default t_cgroup_binding.sh) once
#            more on a cluster that runs Slurm's cgroup/v2 plugin for ConstrainDevices
#            (harness.sh: GPUTOPO_CLUSTER_CGROUP=v2-devices), after the build (and full)
#     deb    `make deb` inside the root, install the .deb there, run a --gpu-topo job with it
#            (tests/release/deb_check.sh)
#   GPUTOPO_RELEASE_EXTRA_PACKAGES="python3-torch": Debian packages added to the root (a root
#   of its own in the cache), for the cluster tests that run a real training job.
#   GPUTOPO_RELEASE_DEBUG_INFO=-g1: the build's debug information (Makefile DEBUG_INFO; CI).
#
# The root (Slurm, munge and the build dependencies installed) is cached as a tarball
# under $GPUTOPO_RELEASE_CACHE (default /var/cache/gputopo/release); without it the cold
# path (debootstrap + apt-get) runs and fills the cache. Each run unpacks a fresh copy in
# /tmp/gputopo-release.XXXXXX, copies the source tree there (tracked and untracked files
# git does not ignore), works in a private mount namespace (unshare -m) with /proc, /sys
# and /dev mounted in the root, and on every exit path ends the processes whose root is
# that copy (munged, slurmctld, slurmd...), unmounts and removes it.
# Needs root, debootstrap, unshare, chroot and network access to deb.debian.org.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
suite=${1:?usage: tests/release/run.sh SUITE [full|v2|deb, comma-separated] [TESTS...]}
what=${2:-full}
shift $(( $# >= 2 ? 2 : $# ))
tests="$*"
mirror=${GPUTOPO_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${GPUTOPO_RELEASE_CACHE:-/var/cache/gputopo/release}

# Everything the build, the cluster tests and `make deb` need inside the root.
packages="slurmctld slurmd slurm-client libslurm-dev munge g++ make pkg-config libhwloc-dev libxml2-dev
          python3 procps iproute2 dpkg-dev fakeroot binutils lintian file man-db"
if [ -n "${GPUTOPO_RELEASE_EXTRA_PACKAGES:-}" ]; then packages="$packages $GPUTOPO_RELEASE_EXTRA_PACKAGES"; fi
key=$(printf '%s %s %s' "$suite" "$mirror" "$packages" | sha1sum | cut -c1-12)
tarball=$cache/debian-$suite-$key.tar

t0=$(date +%s)
stamp() { echo "# release $suite: $1 ($(( $(date +%s) - t0 ))s)"; }

for m in ${what//,/ }; do
    case "$m" in full|v2|deb) ;; *) echo "tests/release/run.sh: unknown mode '$m' (expected full, v2 or deb, comma-separated)" >&2; exit 2 ;; esac
done
[ "$(id -u)" = 0 ] || { echo "tests/release/run.sh: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
for b in debootstrap unshare chroot tar; do
    command -v "$b" >/dev/null || { echo "tests/release/run.sh: '$b' is missing (apt-get install debootstrap util-linux)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/gputopo-release.XXXXXX)
root=$work/root

# Processes whose root directory is inside $root (daemons started in the chroot).
root_pids() {
    find /proc/[0-9]*/root -maxdepth 0 \( -lname "$root" -o -lname "$root/*" \) -printf '%h\n' 2>/dev/null |
        sed 's|^/proc/||'
}

kill_root_pids() {
    local pids i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(root_pids)
        [ -n "$pids" ] || return 0
        # shellcheck disable=SC2086
        kill $([ "$i" -gt 5 ] && echo -KILL) $pids 2>/dev/null || true
        sleep 0.5
    done
}

cleanup() {
    local rc=$?
    set +e   # every step of the cleanup runs
    trap - EXIT INT TERM
    # A command still running outside the root (tar, debootstrap) ends first.
    if [ -n "$_bg" ] && kill -0 "$_bg" 2>/dev/null; then kill "$_bg" 2>/dev/null; wait "$_bg" 2>/dev/null; fi
    kill_root_pids
    # The mounts live in the private namespace of the `unshare` below and are gone with it;
    # this is the safety net for a namespace some process still holds.
    if grep -q " $root/" /proc/self/mounts 2>/dev/null; then
        grep " $root/" /proc/self/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    fi
    if grep -q " $root/" /proc/self/mounts 2>/dev/null; then
        echo "tests/release/run.sh: mounts remain under $root; not removing it" >&2
    elif [ -z "${GPUTOPO_KEEP_RELEASE_ROOT:-}" ]; then
        rm -rf --one-file-system "$work"
    fi
    stamp "done, exit $rc"
    exit "$rc"
}
_bg=""   # the command bg_wait runs
trap cleanup EXIT
trap 'exit 130' INT TERM

# A command inside the root, in a private mount namespace with /proc, /sys and /dev. Run in
# the background and waited for, so that INT/TERM run the cleanup at once (bash runs a trap
# only after a foreground command ends).
in_root() { bg_wait _in_root "$@"; }
bg_wait() {
    "$@" &
    _bg=$!
    wait $_bg
}
_in_root() {
    unshare -m --propagation private -- /bin/bash -c '
        set -e
        r=$1; shift
        mount -t proc proc "$r/proc"
        mount --rbind /sys "$r/sys"
        mount --rbind /dev "$r/dev"
        exec chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive /bin/bash -c "$@"' _ "$root" "$@"
}

# 1. The root: from the cache, else debootstrap + apt-get (the cold path CI takes).
mkdir -p "$root"
if [ -f "$tarball" ]; then
    bg_wait tar -C "$root" -xf "$tarball"
    stamp "root unpacked from $tarball"
else
    mkdir -p "$cache"
    # A debootstrap older than the suite has no script for it: every Debian suite since
    # bookworm uses sid's.
    script=/usr/share/debootstrap/scripts/$suite
    [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
    bg_wait unshare -m --propagation private -- debootstrap --variant=minbase "$suite" "$root" "$mirror" "$script" \
        > "$work/debootstrap.log" 2>&1 ||
        { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
    stamp "debootstrap $suite"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # shellcheck disable=SC2086
    in_root "apt-get -o Acquire::Check-Valid-Until=false update -qq && apt-get install -y -qq --no-install-recommends $(echo $packages) >/dev/null" ||
        { echo "tests/release/run.sh: apt-get install in the $suite root failed" >&2; exit 1; }
    in_root "apt-get clean; rm -rf /var/lib/apt/lists/*"
    stamp "packages installed"
    bg_wait tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    stamp "root cached as $tarball"
fi
# The machine's own name must resolve inside the root as it does outside: the
# daemons and commands share this host's name. Without it every lookup waits
# for DNS: munged warns at start, and Slurm 24.11's slurmctld spent 10 s in
# each requeue RPC (getaddrinfo() failed, "very large processing time from
# _slurm_rpc_requeue"), longer than the launcher then waited.
cp /etc/hosts "$root/etc/hosts"
release=$(in_root "dpkg-query -W -f '\${Version}' libslurm-dev")
echo "# release $suite: Slurm $release"

# 2. The source tree (without build outputs), at /src in the root.
mkdir -p "$root/src"
copy_source() { (cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$root/src" -xf -; }
bg_wait copy_source

# 3. Build; then what was asked.
# GPUTOPO_RELEASE_DEBUG_INFO=-g1: the Makefile's DEBUG_INFO (CI: line tables only, a faster build).
debug_info=${GPUTOPO_RELEASE_DEBUG_INFO:+DEBUG_INFO=$GPUTOPO_RELEASE_DEBUG_INFO}
in_root "cd /src && make -j2 $debug_info all > /tmp/build.log 2>&1 || { tail -n 30 /tmp/build.log; exit 1; }; grep -m1 'building against Slurm' /tmp/build.log || true"
stamp "built"

status=0
# GPUTOPO_KEEP_CLUSTER=1 (with GPUTOPO_KEEP_RELEASE_ROOT=1): each cluster's directory (logs) stays in the root.
keep=${GPUTOPO_KEEP_CLUSTER:+GPUTOPO_KEEP_CLUSTER=$GPUTOPO_KEEP_CLUSTER}
for m in ${what//,/ }; do
    rc=0
    case "$m" in
    full)
        in_root "cd /src && $keep GPUTOPO_CLUSTER_CGROUP='${GPUTOPO_CLUSTER_CGROUP:-auto}' GPUTOPO_CLUSTER_TESTS='$tests' bash tests/run_tests.sh --build build --cluster-only" || rc=1
        ;;
    v2)
        in_root "cd /src && $keep GPUTOPO_CLUSTER_CGROUP=v2-devices GPUTOPO_CLUSTER_TESTS='${GPUTOPO_RELEASE_V2_TESTS:-t_cgroup_binding.sh}' bash tests/run_tests.sh --build build --cluster-only" || rc=1
        ;;
    deb)
        in_root "cd /src && bash tests/release/deb_check.sh" || rc=1
        ;;
    esac
    stamp "$m: exit $rc"
    [ "$rc" -eq 0 ] || status=1
done
exit $status
