#!/usr/bin/env bash
# The outcome mix of the mock learner against each rule opponent (docs/src/decisions/rules.md,
# "What a seat is told"): `dealgym run` over the first N scenarios of every family, one run per
# family and opponent, then `dealgym report` of each opponent's runs together. Run it with two
# binaries (a build before a prompt change and one after) to see what the change moved.
# MOCK_BIN (default BIN) serves the mock, so one mock can answer the prompts of either build.
# Usage: scripts/rules-told.sh BIN DIR [N] [-- RUN FLAGS...]   (N default 30; e.g. -- --max-rounds 12)
set -euo pipefail
B=$1
D=$2
N=${3:-30}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = "--" ] && shift
PORT=${PORT:-18941}
M=${MOCK_BIN:-$B}
mkdir -p "$D"
"$M" mock --port "$PORT" > "$D/mock.log" 2>&1 &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.1; done
for opp in boulware linear conceder; do
  for f in ahp craigslist casino dnd job_interview; do
    rm -f "$D/$opp-$f.jsonl"
    "$B" run --scenarios "scenarios/$f.jsonl" --limit "$N" --seed 1 --quiet \
      --learner "openai:mock@http://127.0.0.1:$PORT/v1" --opponent "rule:$opp" \
      --out "$D/$opp-$f.jsonl" "$@" > /dev/null 2>&1
  done
  "$B" report --quiet --transcripts 0 --out "$D/report-$opp" "$D/$opp"-*.jsonl > /dev/null 2>&1
done
python3 - "$D" <<'PY'
import collections, json, sys, glob
d = sys.argv[1]
print("| opponent | episodes | deal % | reject_loop % | max_turns % | walk_away % | format_forfeit % | learner ρ per episode |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for opp in ["boulware", "linear", "conceder"]:
    kinds, rho, n = collections.Counter(), 0.0, 0
    for path in sorted(glob.glob(f"{d}/{opp}-*.jsonl")):
        for line in open(path):
            o = json.loads(line)["outcome"]
            kinds[o["kind"]] += 1
            rho += o["rho"]["learner"] if o["kind"] == "deal" else 0.0
            n += 1
    pct = lambda k: f"{100 * kinds[k] / n:.1f}"
    print(f"| rule:{opp} | {n} | {pct('deal')} | {pct('reject_loop')} | {pct('max_turns')} "
          f"| {pct('walk_away')} | {pct('format_forfeit')} | {rho / n:.3f} |")
PY
