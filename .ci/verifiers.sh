#!/usr/bin/env bash
# The verifiers environment (issue 23, item 3): builds the wheel from this checkout with maturin
# (the README's install line) into its own venv under ~/.cache with verifiers pinned, and runs
# crates/python/tests/test_verifiers.py, which plays episodes through vf-eval against a live
# `dealgym mock`. Prints one SKIPPED line when PyPI cannot be reached (verifiers and the null
# harness's uv script come from it); once it can, every failure is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=15)" 2>/dev/null; then
  echo "SKIPPED: verifiers: PyPI (https://pypi.org) cannot be reached from this machine"
  exit 0
fi
venv="${HOME}/.cache/dealgym/verifiers-venv"
python3 -m venv "$venv"
pip="$venv/bin/pip --disable-pip-version-check"
$pip install -q -r crates/python/requirements-verifiers.txt
# The README's line: pip builds the wheel with maturin (release) from this checkout, once per CI
# run (.ci/wheel.sh); the wheel holds dealgym and dealgym_verifiers.
. .ci/wheel.sh
$pip install -q --force-reinstall --no-deps "$(dealgym_wheel "$pip")"
cargo build --locked -q
# The venv's bin first: vf-eval, and the pinned uv the harness runs its chat program with.
. .ci/no-skips.sh
PATH="$venv/bin:$PATH" DEALGYM_BIN="$PWD/target/debug/dealgym" \
  pytest_none_skipped "$venv/bin/python" crates/python/tests/test_verifiers.py
