# Helpers for the gputopo run cluster tests (t_job_restart.sh, t_job_spares.sh, t_job_torch.sh):
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
# ev DIR PYTHON-EXPR: exit 0 when some event e of DIR makes the expression true.
ev() {
    events "$1" | python3 -c "
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
sys.exit(0 if any(eval(sys.argv[1], {}, {'e': e}) for e in ev) else 1)" "$2"
}
