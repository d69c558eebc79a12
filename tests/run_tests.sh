#!/usr/bin/env bash
# Runs every test and ends with one line "N passed, M failed" (test cases).
#   tests/run_tests.sh [--build DIR] [--unit-only | --cluster-only]
# Unit tests: the Catch2 binary DIR/unit-tests (each TEST_CASE is one case).
# Cluster tests: tests/cluster/run.sh starts a local Slurm cluster, runs the
# end-to-end cases and prints one "ok - NAME" or "not ok - NAME" line each.
set -u
cd "$(dirname "$0")/.."
build=build
what=all
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --unit-only) what=unit; shift ;;
        --cluster-only) what=cluster; shift ;;
        *) echo "run_tests.sh: unknown argument '$1' (expected --build DIR, --unit-only or --cluster-only)" >&2; exit 2 ;;
    esac
done

# The gputopo binary the end-to-end CLI unit tests run (they fail when it is missing).
export GPUTOPO_CLI="$PWD/$build/gputopo"
case "$build" in /*) GPUTOPO_CLI="$build/gputopo" ;; esac

passed=0
failed=0
status=0

# The fake libnvidia-ml.so.1 the NVML unit tests load through dlopen.
export GPUTOPO_FAKE_NVML="$PWD/$build/fake-nvml/libnvidia-ml.so.1"
case "$build" in /*) GPUTOPO_FAKE_NVML="$build/fake-nvml/libnvidia-ml.so.1" ;; esac

# Runs every unit test case in its own process; counts each.
each_case_separately() {
    local name spec
    while IFS= read -r name; do
        [ -n "$name" ] || continue
        spec=$(printf '%s' "$name" | sed 's/[][\\,~"*]/\\&/g')
        if "$build/unit-tests" --use-colour no "$spec" > "$log.one" 2>&1 && grep -q '^All tests passed' "$log.one"; then
            passed=$((passed + 1))
        else
            echo "not ok - unit test case: $name" >&2
            tail -n 20 "$log.one" >&2
            failed=$((failed + 1))
        fi
    done < <("$build/unit-tests" --list-test-names-only 2>/dev/null)
    rm -f "$log.one"
}

if [ "$what" != cluster ]; then
    echo "== unit tests ($build/unit-tests)"
    log=$(mktemp)
    "$build/unit-tests" --use-colour no 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    summary=$(grep -E '^(All tests passed|test cases:)' "$log" | tail -n 1)
    if [[ "$summary" =~ All\ tests\ passed\ \(([0-9]+)\ assertions?\ in\ ([0-9]+)\ test\ cases?\) ]]; then
        passed=$((passed + BASH_REMATCH[2]))
    elif [[ "$summary" =~ test\ cases:\ *([0-9]+)\ \|\ *([0-9]+)\ passed\ \|\ *([0-9]+)\ failed ]]; then
        passed=$((passed + BASH_REMATCH[2]))
        failed=$((failed + BASH_REMATCH[3]))
    elif [[ "$summary" =~ test\ cases:\ *([0-9]+)\ \|\ *([0-9]+)\ failed ]]; then
        failed=$((failed + BASH_REMATCH[2]))
    else
        # The binary died (a signal Catch2 does not catch): keep every other
        # case's result by running each case in its own process.
        echo "run_tests.sh: the unit tests ended without a summary (exit $rc); running each case on its own" >&2
        each_case_separately
    fi
    [ "$rc" -eq 0 ] || status=1
    rm -f "$log"
fi

# The cluster suite is never skipped silently: a missing run.sh is a failure
# (it is run with bash, so its mode does not matter).
if [ "$what" != unit ] && [ ! -f tests/cluster/run.sh ]; then
    echo "not ok - cluster tests: tests/cluster/run.sh is missing"
    failed=$((failed + 1))
elif [ "$what" != unit ]; then
    echo "== cluster tests (tests/cluster/run.sh)"
    log=$(mktemp)
    bash tests/cluster/run.sh "$build" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    ok=$(grep -c '^ok - ' "$log")
    notok=$(grep -c '^not ok - ' "$log")
    passed=$((passed + ok))
    failed=$((failed + notok))
    if [ "$rc" -ne 0 ] && [ "$notok" -eq 0 ]; then
        echo "run_tests.sh: the cluster tests failed outside a test case (exit $rc)" >&2
        failed=$((failed + 1))
    fi
    [ "$rc" -eq 0 ] || status=1
    rm -f "$log"
fi

[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
