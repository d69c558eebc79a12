#!/usr/bin/env bash
# The test runners cannot lie: a cluster script that dies early, skips a case
# or has no plan is counted as failed (tap_count_results, used by run.sh);
# a unit-test binary killed by a signal keeps every other case's result
# (tests/run_tests.sh runs each case on its own then). Uses stand-ins only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/harness.sh"
tap_plan 5
w=$(mktemp -d /tmp/gputopo-counting.XXXXXX)
trap 'rm -rf "$w"' EXIT

count() {  # LOG-TEXT RC -> "STATUS|NOT-OK-LINES"
    printf '%s\n' "$1" > "$w/log"
    local lines st
    lines=$(tap_count_results t_x.sh "$w/log" "$2")
    st=$?
    echo "$st|$(printf '%s\n' "$lines" | grep -c '^not ok - ')"
}
got=$(count "# plan 3
ok - a" 1)
[ "$got" = "1|2" ] && tap_ok "a script that dies after 1 of 3 planned cases: 2 cases counted failed" ||
    tap_not_ok "a script that dies after 1 of 3 planned cases: 2 cases counted failed" "got $got"
got=$(count "ok - a" 0)
[ "$got" = "1|1" ] && tap_ok "a script without a plan line fails" || tap_not_ok "a script without a plan line fails" "got $got"
got=$(count "# plan 1
ok - a" 3)
[ "$got" = "1|1" ] && tap_ok "a script that exits non-zero with every case ok fails" ||
    tap_not_ok "a script that exits non-zero with every case ok fails" "got $got"
got=$(count "# plan 2
ok - a
not ok - b" 0)
[ "$got" = "1|0" ] && tap_ok "a complete script with one failed case: failed, nothing added" ||
    tap_not_ok "a complete script with one failed case: failed, nothing added" "got $got"

# A unit-test binary that SIGUSR1 kills mid-run: 3 cases, one of which
# crashes on its own too. Expect 2 passed, 1 failed, names with ',' intact.
mkdir -p "$w/build"
cat > "$w/build/unit-tests" <<'EOS'
#!/bin/bash
[ "$1" = --list-test-names-only ] && { printf 'case a\ncase b, with a comma\ncase d [x]\n'; exit 0; }
[ "$1" = --use-colour ] && shift 2
case "${1-}" in
    "") echo "case a ... passed"; kill -USR1 $$ ;;
    'case a'|'case b\, with a comma') echo "All tests passed (1 assertion in 1 test case)"; exit 0 ;;
    'case d \[x\]') kill -USR1 $$ ;;
    *) echo "unexpected spec: $1"; exit 2 ;;
esac
EOS
chmod +x "$w/build/unit-tests"
summary=$(with_timeout 60 bash "$here/../run_tests.sh" --build "$w/build" --unit-only 2>/dev/null | tail -n 1)
[ "$summary" = "2 passed, 1 failed" ] && tap_ok "a unit-test binary killed by a signal: each case run on its own, 2 passed, 1 failed" ||
    tap_not_ok "a unit-test binary killed by a signal keeps the other cases' results" "got '$summary'"
exit 0
