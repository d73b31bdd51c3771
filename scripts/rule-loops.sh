#!/usr/bin/env bash
# How often the built-in rule players end an episode by repeating themselves: per family, the
# share of episodes that end as `reject_loop` with a `rule:` seat as `outcome.by` (docs/src/guide/rule-players.md,
# "Rule players"). Two evals over the first N scenarios of every family: every rule
# against every rule (itself included, both seatings), and the mock learner (`dealgym mock`)
# against each rule (both seatings).
# Usage: scripts/rule-loops.sh [N] [DIR]   (default: 30 scenarios per family, /tmp/rule-loops)
# Needs target/release/dealgym (cargo build --release) and python3.
set -euo pipefail
N=${1:-30}
D=${2:-/tmp/rule-loops}
PORT=${PORT:-18931}
B=target/release/dealgym
mkdir -p "$D"
rm -f "$D/rules.jsonl" "$D/mock.jsonl"
S=()
for f in ahp craigslist casino dnd job_interview; do S+=(--scenarios "scenarios/$f.jsonl"); done
R=(--opponent vs-boulware=rule:boulware --opponent vs-linear=rule:linear --opponent vs-conceder=rule:conceder
   --opponent vs-ina=rule:ina --opponent vs-ina-code=rule:ina-code)

"$B" eval "${S[@]}" --limit "$N" --quiet --swap-seats --out "$D/rules.jsonl" \
  --player boulware=rule:boulware --player linear=rule:linear --player conceder=rule:conceder \
  --player ina=rule:ina --player ina-code=rule:ina-code "${R[@]}" > /dev/null

"$B" mock --port "$PORT" > "$D/mock.log" 2>&1 &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.1; done
"$B" eval "${S[@]}" --limit "$N" --quiet --swap-seats --out "$D/mock.jsonl" \
  --player "mock=openai:mock@http://127.0.0.1:$PORT/v1" "${R[@]}" > /dev/null

python3 - "$D/rules.jsonl" "$D/mock.jsonl" <<'EOF'
import collections, json, sys
for path in sys.argv[1:]:
    total, by_rule, by_other = collections.Counter(), collections.Counter(), collections.Counter()
    for line in open(path):
        r = json.loads(line)
        fam, o = r["family"], r["outcome"]
        total[fam] += 1
        if o["kind"] == "reject_loop":
            rule = r["seats"][o["by"]]["player"].startswith("rule:")
            (by_rule if rule else by_other)[fam] += 1
    print(f"{path}\n| family | episodes | reject_loop by a rule seat | by the other seat |")
    print("|---|---:|---:|---:|")
    for fam in sorted(total) + ["all"]:
        n = sum(total.values()) if fam == "all" else total[fam]
        a = sum(by_rule.values()) if fam == "all" else by_rule[fam]
        b = sum(by_other.values()) if fam == "all" else by_other[fam]
        print(f"| {fam} | {n} | {a} ({100 * a / n:.1f}%) | {b} ({100 * b / n:.1f}%) |")
EOF
