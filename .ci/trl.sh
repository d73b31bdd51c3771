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
if ! python3 -c "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=15)" 2>/dev/null; then
  echo "SKIPPED: trl: PyPI (https://pypi.org) cannot be reached from this machine"
  exit 0
fi
venv="${HOME}/.cache/dealgym/trl-venv"
python3 -m venv "$venv"
pip="$venv/bin/pip --disable-pip-version-check"
$pip install -q -r crates/python/requirements-trl.txt
# The tokenizer of the tiny model: the anthropic wheel's tokenizer.json (nothing of it is imported).
$pip install -q --no-deps anthropic==0.34.2
# The package, built from this checkout by pip once per CI run (.ci/wheel.sh).
. .ci/wheel.sh
$pip install -q --force-reinstall --no-deps "$(dealgym_wheel "$pip")"
cargo build --locked -q
# Two cores are plenty for a 2-layer model; more threads only contend.
export DEALGYM_BIN="$PWD/target/debug/dealgym" DEALGYM_REQUIRE_TRL=1 TRL_EXPERIMENTAL_SILENCE=1 OMP_NUM_THREADS=1
. .ci/no-skips.sh
pytest_none_skipped "$venv/bin/python" crates/python/tests/test_trl.py
tokenizer=$("$venv/bin/python" -c "import importlib.util, os; print(os.path.join(importlib.util.find_spec('anthropic').submodule_search_locations[0], 'tokenizer.json'))")
"$venv/bin/python" examples/python/trl_rollout.py --tiny "$tokenizer" --cpu --steps 1 \
  --turn-tokens 16 --max-completion-length 128 --out "$(mktemp -d)"
