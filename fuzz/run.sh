#!/usr/bin/env bash
# Runs every libFuzzer target built by `make fuzz` for SECONDS each (default
# 25) on its seed corpus fuzz/corpus/<target>/ (with fuzz/dict/<target>.dict
# when there is one), under ASan+UBSan. New inputs
# go to a scratch directory, never into the committed corpus. Prints one line
# per target with its executions; exits non-zero when a target found a crash,
# a leak, undefined behaviour or an escaping exception (the reproducer is
# kept in $FUZZ_ARTIFACTS, default build-fuzz/artifacts/).
#   bash fuzz/run.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-25}
shift || true
bin=build-fuzz/fuzz
artifacts=${FUZZ_ARTIFACTS:-build-fuzz/artifacts}
mkdir -p "$artifacts"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for t in "$bin"/fuzz_*; do targets+=("$(basename "$t")"); done
fi
[ -x "$bin/${targets[0]}" ] || { echo "fuzz/run.sh: no targets in $bin (run make fuzz first)" >&2; exit 2; }
# libhwloc leaks the objects of an XML import it gives up on (hwloc's error
# paths, a few hundred bytes per failed load); not ours to fix.
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
scratch=$(mktemp -d /tmp/gputopo-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
failed=0
total=0
for t in "${targets[@]}"; do
    name=${t#fuzz_}
    seeds=fuzz/corpus/$name
    mkdir -p "$scratch/$name"
    log=$scratch/$name.log
    # A dictionary of the format's words (fuzz/dict/<target>.dict), when there is one.
    dict=()
    [ -f "fuzz/dict/$name.dict" ] && dict=(-dict="fuzz/dict/$name.dict")
    # -rss_limit_mb: a target must not need more (no input may decide how much memory is spent).
    "$bin/$t" "${dict[@]}" -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 -timeout=20 \
        -artifact_prefix="$artifacts/$name-" "$scratch/$name" "$seeds" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    per_s=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        printf 'fuzz %-18s ok   %10s executions (%s/s)\n' "$name" "${execs:-?}" "${per_s:-?}"
    else
        failed=$((failed + 1))
        printf 'fuzz %-18s FAIL %10s executions (exit %d); reproducer in %s:\n' "$name" "${execs:-?}" "$rc" "$artifacts"
        grep -E 'ERROR: |SUMMARY: |runtime error|terminate called|Test unit written' "$log" | head -8 | sed 's/^/    /'
    fi
    total=$((total + ${execs:-0}))
done
echo "fuzz: ${#targets[@]} targets, $total executions, $failed failed"
[ $failed -eq 0 ]
