#!/usr/bin/env bash
# What a call costs the model, on the mock's replicas: prompt tokens evaluated per call against
# the minimum (the tokens new since the seat's last call), per family, with `sticky` and with
# `least_loaded` routing, at many episodes in flight over several mocks that model a prefix
# cache (`dealgym mock --prefix-cache-tokens`). The figure is dealgym's own (`dealgym report`'s
# tables/prompt_cost.csv, computed from the records); this script only sets the stage.
#
#   scripts/prompt-cost-mock.sh [--replicas N] [--limit L] [--group-size G] [--concurrency C]
#                               [--cache-tokens T] [--latency-ms MS] [--keep DIR]
#
# Defaults: 4 replicas, 1024 episodes in flight, both seats on the replicas (self-play), L = 400
# scenarios of each of the five two-party families played once (1,709 episodes: Job Interview
# has 109 scenarios; with G > 1 a GRPO group's members share their conversations' prefixes, so
# a seat finds more than its own history cached and the figure drops below 1), a cache
# of 2^22 tokens per replica (more than the conversations in flight hold, so what is re-read is
# the routing's doing, not the capacity's), 20 ms latency. Each routing gets fresh mocks.
# Prints, per routing, one line per family: calls, prompt, cached, evaluated, minimum, the
# ratio evaluated/minimum and the same after each seat's first call. Exits non-zero only when
# a run or a report fails or the report has no prompt-cost table (a broken measurement).
# DEALGYM_BIN: a dealgym binary to use instead of building target/release/dealgym.
set -euo pipefail
cd "$(dirname "$0")/.."

REPLICAS=4 LIMIT=400 GROUP=1 CONCURRENCY=1024 CACHE=$((1 << 22)) LATENCY=20 KEEP=
while [ $# -gt 0 ]; do
  case "$1" in
    --replicas) REPLICAS=$2; shift 2 ;;
    --limit) LIMIT=$2; shift 2 ;;
    --group-size) GROUP=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --cache-tokens) CACHE=$2; shift 2 ;;
    --latency-ms) LATENCY=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    *) echo "usage: scripts/prompt-cost-mock.sh [--replicas N] [--limit L] [--group-size G] [--concurrency C] [--cache-tokens T] [--latency-ms MS] [--keep DIR]" >&2; exit 2 ;;
  esac
done

if [ -z "${DEALGYM_BIN:-}" ]; then cargo build --quiet --release --locked --bin dealgym; fi
DEALGYM=${DEALGYM_BIN:-target/release/dealgym}

work=$(mktemp -d)
pids=()
stop_mocks() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_mocks
  if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp -r "$work"/. "$KEEP"/; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_mocks() { # sets $urls (a TOML list)
  urls=
  for i in $(seq 1 "$REPLICAS"); do
    local port
    port=$(free_port)
    "$DEALGYM" mock --port "$port" --prefix-cache-tokens "$CACHE" --latency-ms "$LATENCY" \
      > "$work/mock-$i.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 100); do
      curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
      sleep 0.1
    done
    urls="$urls${urls:+, }\"http://127.0.0.1:$port/v1\""
  done
}

scenarios=()
for f in ahp craigslist casino dnd job_interview; do scenarios+=(--scenarios "scenarios/$f.jsonl"); done

echo "prompt-cost-mock: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $REPLICAS replicas, $CONCURRENCY in flight, $LIMIT scenarios x $GROUP per family, cache $CACHE tokens per replica, latency $LATENCY ms"
for routing in sticky least_loaded; do
  start_mocks
  printf '[players.pool]\nmodel = "mock"\nendpoints = [%s]\nrouting = "%s"\nmax_in_flight_per_replica = %s\ntimeout_s = 120\n' \
    "$urls" "$routing" "$CONCURRENCY" > "$work/$routing.toml"
  t0=$(date +%s.%N)
  "$DEALGYM" run "${scenarios[@]}" --limit "$LIMIT" --group-size "$GROUP" --config "$work/$routing.toml" \
    --learner pool --opponent pool --seed 1 --concurrency "$CONCURRENCY" --quiet \
    --out "$work/$routing.jsonl" > "$work/$routing.run.txt" 2>&1
  t1=$(date +%s.%N)
  stop_mocks
  "$DEALGYM" report "$work/$routing.jsonl" --out "$work/$routing-report" --transcripts 0 --quiet 2>/dev/null
  table=$work/$routing-report/tables/prompt_cost.csv
  if [ ! -s "$table" ]; then
    echo "prompt-cost-mock: FAIL: the $routing report has no prompt-cost table" >&2
    exit 1
  fi
  echo
  echo "## routing $routing ($(wc -l < "$work/$routing.jsonl") episodes, $(python3 -c "print(round($t1 - $t0, 1))") s)"
  python3 - "$table" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("| family | calls | prompt | cached | evaluated | minimum | evaluated/minimum | after first call |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    if " " in r["group"]:
        continue  # the per-seat rows stay in the CSV
    print(f"| {r['group']} | {r['calls']} | {r['prompt_tokens']} | {r['cached_tokens']} | "
          f"{r['evaluated_tokens']} | {r['minimum_tokens']} | {float(r['ratio']):.3f} | "
          f"{float(r['ratio_later']):.3f} |")
PYEOF
done
