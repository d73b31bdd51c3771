#!/usr/bin/env bash
# The training run of docs/src/python/train.md, by hand (not in CI): GRPO on SmolLM2-135M-Instruct
# at LR (default 3e-5) for MINUTES of wall time, then the same run at a learning rate of 0 (the
# control) for as many steps, one after the other with both cores each, then one report over both.
#
#   examples/train/run.sh [OUT [MINUTES [LR]]] [-- ARGS...]
#
# ARGS go to both runs (the setup: --reward, --precision, --family, --opponent, ...; grpo_cpu.py
# --help); the control's step count is always the trained run's. Each run saves a checkpoint
# every 5 steps (and where its time ran out) under OUT/RUN. Run again with the same OUT, run.sh
# skips a run that finished (OUT/RUN.summary.json) and resumes one that stopped from its last
# checkpoint, with MINUTES more for the trained run.
#
# Needs the trl venv (.ci/trl.sh makes it: ~/.cache/dealgym/trl-venv, or VENV=...; its
# requirements include `gguf`), the model (scripts/real-model-install.sh --model-only) and
# dealgym installed in it from this checkout (its wheel has the `dealgym` command the report uses).
set -euo pipefail
cd "$(dirname "$0")/../.."
positional=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  positional+=("$1")
  shift
done
if [ "${1:-}" = -- ]; then shift; fi
if [ ${#positional[@]} -gt 3 ]; then
  echo "usage: examples/train/run.sh [OUT [MINUTES [LR]]] [-- ARGS...]" >&2
  exit 2
fi
OUT=${positional[0]:-runs/train}
MINUTES=${positional[1]:-60}
LR=${positional[2]:-3e-5}
VENV=${VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dealgym/trl-venv}
if [ "$LR" = 0 ]; then
  echo "LR=0 is the control's: give the trained run's learning rate" >&2
  exit 2
fi
mkdir -p "$OUT"
export OMP_NUM_THREADS=2 TRL_EXPERIMENTAL_SILENCE=1
train() { "$VENV/bin/python" examples/train/grpo_cpu.py --threads 2 --out "$OUT" "$@"; }
steps_of() { "$VENV/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["steps"])' "$1"; }
if [ ! -f "$OUT/lr-$LR.summary.json" ]; then
  train --run "lr-$LR" --learning-rate "$LR" --steps 200 --max-minutes "$MINUTES" "$@" \
    >>"$OUT/lr-$LR.log" 2>&1
fi
steps=$(steps_of "$OUT/lr-$LR.summary.json")
# The control plays the steps the trained run reached, no more: its --steps comes last.
if [ ! -f "$OUT/lr-0.summary.json" ] || [ "$(steps_of "$OUT/lr-0.summary.json")" != "$steps" ]; then
  train --run lr-0 --learning-rate 0 "$@" --steps "$steps" >>"$OUT/lr-0.log" 2>&1
fi
cat "$OUT/lr-$LR.summary.json" "$OUT/lr-0.summary.json"
"$VENV/bin/dealgym" report "$OUT/lr-$LR.jsonl" "$OUT/lr-0.jsonl" --out "$OUT/report" \
  --training-control lr-0
