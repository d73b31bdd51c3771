#!/usr/bin/env bash
# Throughput of the n-party table engine at 6 seats beside the two-party engine at 2 seats, every
# seat on the built-in mock (0 ms latency, on this machine), at a given number of episodes in
# flight. Prints one Markdown row per run: seats, in flight, episodes, turns (model calls), wall
# seconds, turns per second, the run process's CPU per turn and its peak RSS.
#
#   scripts/bench-tables.sh [IN_FLIGHT ...]      (default: 64 256)
#
# Uses target/release/dealgym (cargo build --release --bin dealgym). The two-party side is
# CaSiNo (mock against mock); the table side is the deliberation base game (six parties, all on
# the mock). Both run the same number of episodes per cell.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${DEALGYM:-target/release/dealgym}
[ -x "$BIN" ] || { echo "build it first: cargo build --release --bin dealgym" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $mock_pid 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))
"$BIN" mock --port "$port" >"$work/mock.log" 2>&1 &
mock_pid=$!
for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break; sleep 0.1; done
url="openai:mock@http://127.0.0.1:$port/v1"
base=$(grep -m1 '"deliberation:base:cooperative"' scenarios/deliberation.jsonl)
printf '%s\n' "$base" >"$work/base.jsonl"
seats=()
for role in $(python3 -c 'import json,sys; print(" ".join(p["role"] for p in json.loads(sys.stdin.read())["parties"]))' <"$work/base.jsonl"); do
  seats+=(--seat "$role=$url")
done

row() { # label seats in_flight out args...
  local label=$1 n=$2 c=$3 out=$4; shift 4
  rm -f "$out"
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S %M' -o "$work/time" "$BIN" run "$@" --concurrency "$c" --quiet --out "$out" >/dev/null 2>&1
  t1=$(date +%s.%N)
  read -r user sys rss <"$work/time"
  python3 - "$out" "$label" "$n" "$c" "$t0" "$t1" "$user" "$sys" "$rss" <<'EOF'
import json, sys
out, label, n, c, t0, t1, user, sys_, rss = sys.argv[1:]
episodes = turns = 0
for line in open(out):
    r = json.loads(line)
    episodes += 1
    turns += len(r["turns"])
wall = float(t1) - float(t0)
cpu = float(user) + float(sys_)
print(f"| {label} | {n} | {c} | {episodes} | {turns} | {wall:.1f} | {turns / wall:.0f} | {1e6 * cpu / turns:.0f} | {int(rss) / 1024:.0f} |")
EOF
}

echo "| engine | seats | in flight | episodes | turns | wall s | turns/s | engine CPU µs/turn | peak RSS MB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for c in "${@:-64 256}"; do
  for cc in $c; do
    episodes=$((cc * 4))
    row "two-party (CaSiNo)" 2 "$cc" "$work/two.jsonl" --scenarios scenarios/casino.jsonl --limit "$((episodes / 8))" \
      --group-size 8 --learner "$url" --opponent "$url"
    row "table (deliberation base)" 6 "$cc" "$work/six.jsonl" --scenarios "$work/base.jsonl" \
      --group-size "$episodes" "${seats[@]}"
  done
done
