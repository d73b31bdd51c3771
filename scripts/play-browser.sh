#!/usr/bin/env bash
# `dealgym play`'s web page in a real headless browser (Debian's chromium), played through by a
# person as the page's contract has it (issue 48: the element ids the page keeps).
#
#   scripts/play-browser.sh [OUT_DIR]        (default: target/play-browser)
#
# Installs chromium with apt-get when /usr/bin/chromium is missing, and `websockets` (pinned,
# from PyPI) into a venv at ~/.cache/dealgym/browser-venv for the DevTools driver
# (scripts/play_browser.py); if either cannot be done it prints one "SKIPPED: play-browser: <why>"
# line and exits 0 — never a silent pass. Builds dealgym, starts `dealgym play` on a free port
# with the casino and craigslist scenarios, and plays four whole games, clicking and typing as a
# person would: against rule:linear a casino game at 1400 px (tester1400) and a craigslist game
# at 800 px (tester800); against the built-in mock endpoint the page offers a craigslist game at
# 1400 px (mock1400) and a casino game at 800 px (mock800):
#   - each: the setup form, then on each turn a move from the radios (first an offer from the
#     term controls, then accept as soon as it is offered, else another offer), a line of talk,
#     the `Action:` line in #preview, #send; until #game[data-turn=done] and #outcome[data-kind];
#   - at each width nothing on the page is wider than the window;
#   - no console errors: the page's #console-errors must count none, and chromium must report no
#     console.error, uncaught exception or error log entry;
# then stops the server, and the log it wrote must pass `dealgym replay --verify` and hold the
# four games, each naming the person's seat `human:NAME` beside its opponent. Saves a full-page
# screenshot of each game (play-NAME.png) into OUT_DIR and prints their paths.
# Exits 1 if any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/play-browser}
VENV="${HOME}/.cache/dealgym/browser-venv"
WEBSOCKETS=websockets==17.4

skip() {
  echo "SKIPPED: play-browser: $*"
  exit 0
}

# shellcheck source=scripts/browser-stage.sh
. scripts/browser-stage.sh

# The driver's one dependency, pinned; a venv of its own, kept between runs.
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
log=$(mktemp)
if ! "$VENV/bin/pip" install -q --disable-pip-version-check "$WEBSOCKETS" >"$log" 2>&1; then
  if grep -qiE "connection|resolve|network|timed out|no matching distribution" "$log"; then
    why=$(tail -n 1 "$log" | tr -d '\r')
    rm -f "$log"
    skip "PyPI cannot be reached to install $WEBSOCKETS ($why)"
  fi
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"

cargo build --quiet --bin dealgym
DEALGYM=target/debug/dealgym

rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
started=$(date +%s)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$DEALGYM" play --port "$port" --log "$OUT/play.jsonl" \
  --scenarios scenarios/casino.jsonl --scenarios scenarios/craigslist.jsonl >"$OUT/play.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
up=0
for _ in $(seq 150); do
  if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
    up=1
    break
  fi
  kill -0 "$server" 2>/dev/null || break
  sleep 0.2
done
if [ "$up" -ne 1 ]; then
  echo "FAIL: dealgym play did not answer GET /health on port $port (see $OUT/play.log):" >&2
  tail -n 20 "$OUT/play.log" >&2
  exit 1
fi
echo "ok: dealgym play is up on port $port"


# One game at each width: a wide screen (1400 px) and a narrow one (800 px), each of its own
# family, so both the items form and the price form are played.
# The driver prints its ok/FAIL line; what the person did, step by step, goes to
# driver-WIDTH.log, shown when the game failed.
play_at() {
  local width=$1 family=$2 opponent=$3 name=$4
  if ! timeout 300 "$VENV/bin/python" scripts/play_browser.py --url "http://127.0.0.1:$port/play" \
    --width "$width" --name "$name" --family "$family" --opponent "$opponent" --shot "play-$name" \
    --out "$OUT" --chromium "$CHROMIUM" --trace 2>"$OUT/driver-$name.log"; then
    echo "  the person's last steps as $name (from $OUT/driver-$name.log):"
    tail -n 15 "$OUT/driver-$name.log" | sed 's/^/  /'
    return 1
  fi
}
play_at 1400 casino rule:linear tester1400 || failed=1
play_at 800 craigslist rule:linear tester800 || failed=1
# The built-in mock endpoint `dealgym play` offers (a model on its own port): its spec as the
# page's setup lists it.
mock=$(curl -fsS "http://127.0.0.1:$port/play/api/setup" | python3 -c '
import json, sys
print(next(o["spec"] for o in json.load(sys.stdin)["opponents"] if o["spec"].startswith("openai:mock@")))')
play_at 1400 craigslist "$mock" mock1400 || failed=1
play_at 800 casino "$mock" mock800 || failed=1

# The log is whole once the server has stopped.
kill -TERM "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
trap - EXIT

check "the server wrote its log" "[ -s '$OUT/play.jsonl' ]"
check "the log passes dealgym replay --verify" \
  "'$DEALGYM' replay '$OUT/play.jsonl' --verify >'$OUT/replay.log' 2>&1 || { tail -n 20 '$OUT/replay.log' >&2; false; }"
# Each game is one record, and the record names the person's seat human:NAME beside rule:linear.
seats_named() {
  python3 - "$OUT/play.jsonl" <<'PY'
import json, sys

records = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]


def players(record):
    seats = record.get("seats", {})
    seats = seats.values() if isinstance(seats, dict) else seats
    return [seat.get("player") for seat in seats if isinstance(seat, dict)]


print(f"  {len(records)} record(s): " + "; ".join(" vs ".join(map(str, players(r))) for r in records))
ok = len(records) == 4
for name, against in (("tester1400", "rule:linear"), ("tester800", "rule:linear"),
                      ("mock1400", "openai:mock@"), ("mock800", "openai:mock@")):
    mine = [r for r in records if f"human:{name}" in players(r)]
    if len(mine) != 1 or not any(str(p).startswith(against) for p in players(mine[0])):
        print(f"  no one record with seats human:{name} and {against}")
        ok = False
sys.exit(0 if ok else 1)
PY
}
check "the log holds the four games, seats human:tester1400 and human:tester800 against rule:linear, human:mock1400 and human:mock800 against the mock" \
  seats_named
for name in tester1400 tester800 mock1400 mock800; do
  check "$name: a screenshot was saved" "[ -s '$OUT/play-$name.png' ]"
done
echo "play-browser: took $(($(date +%s) - started)) s"
if [ "$failed" -ne 0 ]; then
  echo "play-browser: failed; see $OUT (play.log, chromium-*.log, play-*-failed.{png,html})" >&2
  exit 1
fi
echo "play-browser: all checks passed; screenshots: $OUT/play-{tester1400,tester800,mock1400,mock800}.png"
