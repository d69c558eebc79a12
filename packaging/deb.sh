#!/usr/bin/env bash
# make deb: a Debian package of what `make all` built, for the Slurm release it was built
# against.   packaging/deb.sh BUILD VERSION SLURM_MAJOR   (run by make deb)
# Writes BUILD/packages/gputopo_VERSION-1+slurmMAJOR_ARCH.deb and its -dbgsym package
# (the debug info split off the stripped binaries), then runs lintian when present.
set -euo pipefail
build=${1:?BUILD} version=${2:?VERSION} major=${3:?SLURM_MAJOR (no Slurm headers found?)}
cd "$(dirname "$0")/.."
. packaging/common.sh
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
debver=$version-1+slurm$major
out=$build/packages
stage=$build/deb/gputopo dbg=$build/deb/gputopo-dbgsym
rm -rf "$build/deb" && mkdir -p "$stage/DEBIAN" "$dbg/DEBIAN" "$out"

# Debian's Slurm plugin directory (slurm-wlm-basic-plugins holds it and libslurmfull,
# which srun and slurmstepd load plugins into). SchedMD's own packages (slurm-smd, plugins in
# /usr/lib/MULTIARCH/slurm) load it from there too: the plugstack snippet names the full path.
stage_install "$build" "$stage" /usr "/usr/lib/$multiarch/slurm-wlm"
split_debug "$stage" "$dbg/usr/lib/debug"
gzip -9n "$stage"/usr/share/man/man*/*
doc=$stage/usr/share/doc/gputopo
install -d "$doc"
gzip -9n < NEWS > "$doc/NEWS.gz"
cat > "$doc/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: gputopo
Source: https://github.com/gputopo/gputopo

Files: *
Copyright: 2026 The gputopo authors
License: Expat
$(sed -e 's/^$/./' -e 's/^/ /' LICENSE | tail -n +4)
COPY
printf 'gputopo (%s) unstable; urgency=medium\n\n  * Built against Slurm %s (see NEWS.gz).\n\n -- gputopo maintainers <gputopo@users.noreply.github.com>  %s\n' \
    "$debver" "$major" "$(date -R -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")" | gzip -9n > "$doc/changelog.Debian.gz"
install -d "$doc/examples"
install -m 0644 etc/gputopo.conf etc/gputopo-launch.conf etc/job_submit.lua etc/epilog_slurmctld_gputopo.sh \
    etc/gputopo-healthcheck.sh "$doc/examples/"
install -m 0644 etc/plugstack.conf.d/gputopo.conf "$doc/examples/plugstack-gputopo.conf"
install -d "$dbg/usr/share/doc" && ln -s gputopo "$dbg/usr/share/doc/gputopo-dbgsym"

# Dependencies: the shared libraries the binaries link, and the Slurm major from either
# Debian's packages (slurm-wlm-basic-plugins) or SchedMD's (slurm-smd, which holds the plugins
# and libslurmfull; debian/control in SchedMD's tree): the lower bound is an alternative in
# Depends, the upper bound a Breaks on both, so that neither provider of another major fits.
next=$(slurm_next_major "$major")
shlibs=$(shlib_depends "$stage")
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CTL
Package: gputopo
Version: $debver
Architecture: $arch
Maintainer: gputopo maintainers <gputopo@users.noreply.github.com>
Installed-Size: $size
Depends: $shlibs, slurm-wlm-basic-plugins (>= $major) | slurm-smd (>= $major)
Breaks: slurm-wlm-basic-plugins (>= $next), slurm-smd (>= $next)
Section: admin
Priority: optional
Homepage: https://github.com/gputopo/gputopo
Description: topology-aware GPU job launch for Slurm $major
 A SPANK plugin (srun/sbatch/salloc --gpu-topo) that binds each task to its
 GPUs, nearest NIC, CPUs and memory; the gputopo CLI (show, plan, doctor) and
 gputopo-launch, a per-task launcher. Built for Slurm $major only (Debian's
 slurm-wlm or SchedMD's slurm-smd packages): Slurm loads a plugin only into
 the release it was built for. Enable the plugin by linking
 /usr/share/gputopo/plugstack.conf into /etc/slurm/plugstack.conf.d/.
CTL
ids=$(find "$dbg/usr/lib/debug/.build-id" -name '*.debug' | sed -E 's|.*/([0-9a-f]{2})/([0-9a-f]+)\.debug|\1\2|' | sort | tr '\n' ' ')
cat > "$dbg/DEBIAN/control" <<CTL
Package: gputopo-dbgsym
Source: gputopo
Version: $debver
Architecture: $arch
Maintainer: gputopo maintainers <gputopo@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$dbg" | cut -f1)
Depends: gputopo (= $debver)
Section: debug
Priority: optional
Auto-Built-Package: debug-symbols
Build-Ids: ${ids% }
Description: debug symbols for gputopo
CTL
# Importing gputopo_run as root writes bytecode beside it, which dpkg does not know of.
cat > "$stage/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
rm -rf /usr/share/gputopo/python/__pycache__
PRERM
chmod 0755 "$stage/DEBIAN/prerm"
(cd "$stage" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
(cd "$dbg" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
deb=$out/gputopo_${debver}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
dpkg-deb --root-owner-group -Zxz --build "$dbg" "$out/gputopo-dbgsym_${debver}_$arch.deb" >/dev/null
echo "gputopo: built $deb (Slurm $major)"
if command -v lintian >/dev/null; then
    lintian --fail-on error "$deb" "$out/gputopo-dbgsym_${debver}_$arch.deb"
fi
