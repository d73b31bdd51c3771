#!/usr/bin/env bash
# The training run of docs/src/python/train.md, by hand (not in CI): GRPO on SmolLM2-135M-Instruct
# at LR (default 3e-5) for MINUTES of wall time, then the same run at a learning rate of 0 (the
# control) for as many steps, one after the other with both cores each, then one report over both.
#
#   examples/train/run.sh [OUT] [MINUTES] [LR] [-- ARGS...]
#
# ARGS go to both runs (the setup: --reward, --family, --opponent, ...; grpo_cpu.py --help).
# A run that stops (a machine that goes away) resumes from its last checkpoint when run.sh is
# run again with the same OUT: each run saves one every 5 steps under OUT/RUN.
#
# Needs the trl venv (.ci/trl.sh makes it: ~/.cache/dealgym/trl-venv, or VENV=...; its
# requirements include `gguf`), the model (scripts/real-model-install.sh --model-only) and
# dealgym installed in it from this checkout (its wheel has the `dealgym` command the report uses).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-runs/train}
MINUTES=${2:-60}
LR=${3:-3e-5}
shift $(( $# < 3 ? $# : 3 ))
if [ "${1:-}" = -- ]; then shift; fi
VENV=${VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dealgym/trl-venv}
if [ "$LR" = 0 ]; then
  echo "LR=0 is the control's: give the trained run's learning rate" >&2
  exit 2
fi
mkdir -p "$OUT"
export OMP_NUM_THREADS=2 TRL_EXPERIMENTAL_SILENCE=1
common=(--threads 2 --out "$OUT" "$@")
"$VENV/bin/python" examples/train/grpo_cpu.py --run "lr-$LR" --learning-rate "$LR" --steps 200 \
  --max-minutes "$MINUTES" "${common[@]}" >>"$OUT/lr-$LR.log" 2>&1
# The control plays the steps the trained run reached, no more (its last line says how many).
steps=$(tail -n 1 "$OUT/lr-$LR.log" | "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["steps"])')
"$VENV/bin/python" examples/train/grpo_cpu.py --run lr-0 --learning-rate 0 --steps "$steps" \
  "${common[@]}" >>"$OUT/lr-0.log" 2>&1
tail -n 1 "$OUT/lr-$LR.log" "$OUT/lr-0.log"
"$VENV/bin/dealgym" report "$OUT/lr-$LR.jsonl" "$OUT/lr-0.jsonl" --out "$OUT/report" \
  --training-control lr-0
