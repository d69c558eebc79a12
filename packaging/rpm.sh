#!/usr/bin/env bash
# make rpm: an RPM of what `make all` built, for the Slurm release it was built against.
#   packaging/rpm.sh BUILD VERSION SLURM_MAJOR   (run by make rpm)
# Writes BUILD/packages/gputopo-VERSION-1.slurmMAJOR.ARCH.rpm and its -debuginfo package,
# then lists the files (rpm -qlp). Needs rpmbuild (Debian: the rpm package).
set -euo pipefail
build=${1:?BUILD} version=${2:?VERSION} major=${3:?SLURM_MAJOR (no Slurm headers found?)}
cd "$(dirname "$0")/.."
. packaging/common.sh
command -v rpmbuild >/dev/null || { echo "packaging/rpm.sh: rpmbuild is missing (apt-get install rpm)" >&2; exit 1; }
top=$(realpath -m "$build/rpm")
stage=$top/stage
out=$(realpath -m "$build/packages")
rm -rf "$top" && mkdir -p "$stage" "$out"
# RPM distributions keep Slurm's plugins in %{_libdir}/slurm.
plugdir=$(rpm --eval '%{_libdir}')/slurm
stage_install "$build" "$stage" /usr "$plugdir"
split_debug "$stage" "$stage/usr/lib/debug"
gzip -9n "$stage"/usr/share/man/man*/*
doc=$stage/usr/share/doc/gputopo
install -d "$doc/examples"
install -m 0644 LICENSE NEWS "$doc/"
install -m 0644 etc/gputopo.conf etc/gputopo-launch.conf etc/job_submit.lua etc/epilog_slurmctld_gputopo.sh \
    etc/gputopo-healthcheck.sh "$doc/examples/"
install -m 0644 etc/plugstack.conf.d/gputopo.conf "$doc/examples/plugstack-gputopo.conf"
rpmbuild -bb --quiet --define "_topdir $top" --define "_rpmdir $out" --define "_build_id_links none" \
    --define "stage $stage" --define "gputopo_version $version" --define "slurm_major $major" \
    --define "slurm_next $(slurm_next_major "$major")" --define "slurm_plugin_dir $plugdir" \
    --define "_rpmfilename %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" packaging/gputopo.spec
rpm=$out/gputopo-$version-1.slurm$major.$(rpm --eval '%{_arch}').rpm
echo "gputopo: built $rpm (Slurm $major)"
rpm -qp --requires "$rpm" | grep -E '^\(*slurm'
list=$(rpm -qlp "$rpm")
echo "$list"
for f in /usr/bin/gputopo /usr/bin/gputopo-launch /usr/lib/gputopo/gputopo-readers.so "$plugdir/gputopo.so" \
         /usr/share/gputopo/plugstack.conf /usr/share/man/man8/gputopo.8.gz /usr/share/doc/gputopo/LICENSE \
         /usr/share/doc/gputopo/examples/job_submit.lua; do
    grep -qxF "$f" <<< "$list" || { echo "packaging/rpm.sh: $f is not in $rpm" >&2; exit 1; }
done
next=$(slurm_next_major "$major")
want="((slurm >= $major with slurm < $next) or (slurm-ohpc >= $major with slurm-ohpc < $next))"
rpm -qp --requires "$rpm" | grep -qxF "$want" ||
    { echo "packaging/rpm.sh: $rpm does not require $want" >&2; exit 1; }
