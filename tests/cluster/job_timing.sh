# Helpers for the gputopo run cluster tests (t_job_restart.sh, t_job_spares.sh, t_job_torch.sh, t_job_slow.sh):
# wall-clock stamps, their arithmetic, and the job-level event log. Sourced.
now() { date +%s.%N; }
# sub A B: A - B, two decimals; le A B: exit 0 when A <= B.
sub() { python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$1" "$2"; }
le() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$1" "$2"; }
# latest FILE: the latest timestamp (first field) in FILE; earliest likewise.
latest() { sort -n "$1" 2>/dev/null | tail -n 1 | cut -d' ' -f1; }
earliest() { sort -n "$1" 2>/dev/null | head -n 1 | cut -d' ' -f1; }
# events DIR: the JSON lines gputopo run logged for the job run in DIR.
events() { cat "$1"/state/gputopo-launch.*.job.jsonl 2>/dev/null; }
# ev DIR PYTHON-EXPR...: exit 0 when, for each expression, some event e of DIR makes it true
# (one python for all: each start costs a second or two on a loaded host).
ev() {
    local d=$1
    shift
    events "$d" | python3 -c "
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
sys.exit(0 if all(any(eval(x, {}, {'e': e}) for e in ev) for x in sys.argv[1:]) else 1)" "$@"
}
# ev_unix DIR NAME: the unix time of the first event NAME.
ev_unix() {
    events "$1" | python3 -c "
import datetime, json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip() and json.loads(l).get('event') == sys.argv[1]]
print('%.3f' % datetime.datetime.strptime(ev[0]['time'], '%Y-%m-%dT%H:%M:%S.%fZ').replace(
    tzinfo=datetime.timezone.utc).timestamp() if ev else '')" "$2"
}
wait_event() {  # DIR PYTHON-EXPR SECONDS
    local _
    for _ in $(seq 1 $(($3 * 5))); do ev "$1" "$2" && return 0; sleep 0.2; done
    return 1
}
# wait_named DIR NAME SECONDS: until an event NAME is logged (grep: cheap enough to poll on a loaded host).
wait_named() {
    local end=$((SECONDS + $3))
    while [ "$SECONDS" -lt "$end" ]; do
        grep -qs "\"event\": \"$2\"" "$1"/state/gputopo-launch.*.job.jsonl && return 0
        sleep 0.3
    done
    return 1
}
