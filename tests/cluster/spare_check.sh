#!/bin/sh
# A `gputopo run --spare-check` for t_job_spares.sh: records where and when it
# ran (DIR/checks), fails (exit 1) when DIR/bad.NODE exists, hangs when
# DIR/hang.NODE exists (gputopo run's --spare-check-timeout ends it).
d=$1
n=$SLURMD_NODENAME
echo "$(date +%s.%N) node=$n pid=$$" >> "$d/checks"
[ -e "$d/bad.$n" ] && { echo "spare check: $n is unhealthy (test)" >&2; exit 1; }
[ -e "$d/hang.$n" ] && exec sleep 300
exit 0
