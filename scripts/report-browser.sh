#!/usr/bin/env bash
# `dealgym report`'s HTML page in a real headless browser (Debian's chromium).
#
#   scripts/report-browser.sh [OUT_DIR]        (default: target/report-browser)
#
# Installs chromium with apt-get when /usr/bin/chromium is missing (if that cannot be done it
# prints one "SKIPPED: report-browser: <why>" line and exits 0 — never a silent pass), builds
# dealgym, plays a small run over all five families (`dealgym demo`: the built-in mock endpoint
# in process, no network) and an eval of two rule players against two rule opponents over all
# five families, writes the report of both files (so it has the cross-play matrix and the
# ratings), and opens report.html#selftest headless:
#   - the page's own self-check (run on the #selftest fragment, at each width) must write PASS
#     into #selftest-result: tables and charts are there and laid out, a transcript is there, the
#     search box narrows and restores the list, the family filter agrees;
#   - no console errors: the page's #console-errors (fed by window error events and a wrapped
#     console.error) must be empty, and chromium's own log (--enable-logging=stderr) must show
#     no console error or uncaught exception;
#   - the dumped DOM must hold the tables, an <svg> chart and the transcripts;
#   - the answer comes first: the ratings and the cross-play matrix before any folded table;
#   - at 1400 px and at 800 px wide, nothing on the page is wider than the window (the
#     self-check measures every table, chart and transcript);
# then saves a screenshot at each width (report-1400.png, report-800.png) into OUT_DIR and
# prints their paths. Exits 1 if any check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-target/report-browser}

skip() {
  echo "SKIPPED: report-browser: $*"
  exit 0
}

# shellcheck source=scripts/browser-stage.sh
. scripts/browser-stage.sh

cargo build --quiet --bin dealgym
DEALGYM=target/debug/dealgym

rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
"$DEALGYM" demo --per-family 3 --out "$OUT/run.jsonl" >"$OUT/run.log" 2>&1
SCENARIOS=()
for family in ahp craigslist casino dnd job_interview; do
  SCENARIOS+=(--scenarios "scenarios/$family.jsonl")
done
"$DEALGYM" eval "${SCENARIOS[@]}" --limit 2 --quiet --swap-seats \
  --player linear=rule:linear --player conceder=rule:conceder \
  --opponent boulware=rule:boulware --opponent linear-opp=rule:linear \
  --out "$OUT/eval.jsonl" >>"$OUT/run.log" 2>&1
"$DEALGYM" report --quiet "$OUT/run.jsonl" "$OUT/eval.jsonl" --out "$OUT/report" >>"$OUT/run.log" 2>&1
URL="file://$OUT/report/report.html#selftest"

PROFILE=$(mktemp -d)
trap 'rm -rf "$PROFILE"' EXIT
FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$PROFILE" --enable-logging=stderr --v=0)

# The page at two widths: a wide screen (1400 px) and a narrow one (800 px). At each, the
# page's self-check measures that nothing is wider than the window.
for width in 1400 800; do
  timeout 180 "$CHROMIUM" "${FLAGS[@]}" --window-size="$width,2000" --virtual-time-budget=10000 \
    --dump-dom "$URL" >"$OUT/dom-$width.html" 2>"$OUT/chromium-dom-$width.log" || true
  timeout 180 "$CHROMIUM" "${FLAGS[@]}" --hide-scrollbars --window-size="$width,2400" \
    --virtual-time-budget=10000 --screenshot="$OUT/report-$width.png" "$URL" \
    >/dev/null 2>"$OUT/chromium-screenshot-$width.log" || true
done

for width in 1400 800; do
  dom="$OUT/dom-$width.html"
  check "$width px: the page was rendered and dumped" "[ -s '$dom' ]"
  check "$width px: self-check passed ($(grep -o '<div id="selftest-result"[^>]*>[^<]*' "$dom" | sed 's/.*>//'))" \
    "grep -q '<div id=\"selftest-result\"[^>]*>PASS' '$dom'"
  check "$width px: no error reached the page's console" \
    "grep -q '<div id=\"console-errors\"[^>]*data-count=\"0\"[^>]*></div>' '$dom'"
  check "$width px: a screenshot was saved" "[ -s '$OUT/report-$width.png' ]"
done
dom="$OUT/dom-1400.html"
check "no console error in chromium's log" \
  "! grep -E 'CONSOLE|Uncaught' '$OUT'/chromium-*.log | grep -Eiq 'error|uncaught'"
check "tables rendered" "grep -q '<table class=\"figures\"' '$dom'"
check "an SVG chart rendered" "grep -q '<svg' '$dom'"
check "the cross-play matrix and the ratings rendered" \
  "grep -q 'id=\"table-crossplay\"' '$dom' && grep -q 'id=\"table-ratings\"' '$dom'"
# The answer first: the ratings and the cross-play heatmap come before any folded detail table.
at() { grep -bo "$1" "$dom" | head -1 | cut -d: -f1; }
check "the ratings and the matrix come before every detail table" \
  "[ \"\$(at 'id=\"table-ratings\"')\" -lt \"\$(at '<details class=\"table\"')\" ] && [ \"\$(at 'Each player against each opponent')\" -lt \"\$(at '<details class=\"table\"')\" ]"
check "transcripts rendered" "grep -q '<details class=\"episode\"' '$dom'"
if [ "$failed" -ne 0 ]; then
  echo "report-browser: failed; see $OUT (dom.html, chromium-*.log)" >&2
  exit 1
fi
echo "report-browser: all checks passed; screenshots: $OUT/report-1400.png, $OUT/report-800.png"
