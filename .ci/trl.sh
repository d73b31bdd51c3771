#!/usr/bin/env bash
# TRL (issue 23): dealgym.trl under TRL's real GRPOTrainer on the CPU (docs/src/python/trl.md):
# the tool environments (environment_factory) and the rollout function (rollout_func), a step
# each on a tiny random Llama, every malformed tool call, records that pass replay --verify, and
# the example. Its own venv under ~/.cache with the pinned crates/python/requirements-trl.txt
# (torch from PyPI brings its CUDA libraries: about 6 GB, installed once) and the wheel built from
# this checkout. Prints one SKIPPED line when PyPI cannot be reached; once it can, every failure,
# and every skipped test, is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/venv.sh
stage_venv trl trl crates/python/requirements-trl.txt tokenizer
# Two cores are plenty for a 2-layer model; more threads only contend.
export DEALGYM_REQUIRE_TRL=1 TRL_EXPERIMENTAL_SILENCE=1 OMP_NUM_THREADS=1
pytest_none_skipped "$venv/bin/python" crates/python/tests/test_trl.py
tokenizer=$("$venv/bin/python" -c "import importlib.util, os; print(os.path.join(importlib.util.find_spec('anthropic').submodule_search_locations[0], 'tokenizer.json'))")
"$venv/bin/python" examples/python/trl_rollout.py --tiny "$tokenizer" --cpu --steps 1 \
  --turn-tokens 16 --max-completion-length 128 --out "$(mktemp -d)"
