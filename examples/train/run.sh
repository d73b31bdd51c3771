#!/usr/bin/env bash
# The training run of docs/src/python/train.md, by hand (not in CI): GRPO on SmolLM2-135M-Instruct
# at LR (default 3e-5) beside the same run at a learning rate of 0, side by side on the CPU (one
# torch thread each), for MINUTES of wall time each, then one report over both.
#
#   examples/train/run.sh [OUT] [MINUTES] [LR]
#
# Needs the trl venv (.ci/trl.sh makes it: ~/.cache/dealgym/trl-venv, or VENV=...; its
# requirements include `gguf`), the model (scripts/real-model-install.sh --model-only) and
# dealgym built from this checkout (the venv's wheel, and target/release/dealgym for the report).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-runs/train}
MINUTES=${2:-60}
LR=${3:-3e-5}
VENV=${VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dealgym/trl-venv}
if [ "$LR" = 0 ]; then
  echo "LR=0 is the control's: give the trained run's learning rate" >&2
  exit 2
fi
mkdir -p "$OUT"
export OMP_NUM_THREADS=1 TRL_EXPERIMENTAL_SILENCE=1
common=(--steps 200 --max-minutes "$MINUTES" --threads 1 --out "$OUT")
"$VENV/bin/python" examples/train/grpo_cpu.py --run "lr-$LR" --learning-rate "$LR" "${common[@]}" \
  >"$OUT/lr-$LR.log" 2>&1 &
trained=$!
"$VENV/bin/python" examples/train/grpo_cpu.py --run lr-0 --learning-rate 0 "${common[@]}" \
  >"$OUT/lr-0.log" 2>&1 &
control=$!
status=0
wait $trained || status=$?
wait $control || status=$?
tail -n 1 "$OUT/lr-$LR.log" "$OUT/lr-0.log"
if [ $status -ne 0 ]; then
  echo "a training run failed (exit $status): see $OUT/*.log" >&2
  exit $status
fi
cargo build --quiet --release --locked --bin dealgym
target/release/dealgym report "$OUT/lr-$LR.jsonl" "$OUT/lr-0.jsonl" --out "$OUT/report" \
  --training-control lr-0
