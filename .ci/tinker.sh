#!/usr/bin/env bash
# The Tinker cookbook adapter (dealgym.tinker, issue 23): a venv under ~/.cache with the pinned
# tinker-cookbook 0.5.8 and tinker 0.38.0 (crates/python/requirements-tinker.txt; torch comes with
# the cookbook), the package built from this checkout as .ci/python.sh builds it, then
# test_tinker.py: the cookbook's own rollout code with a scripted stand-in for Tinker's sampling
# client, whose service cannot be reached from CI. Prints one SKIPPED line when PyPI cannot be
# reached; once it can, every failure is a failure. A first install fills about 6 GB (torch and
# its CUDA wheels, pulled by the cookbook) and took 3 min on the 2-core build machine; later runs
# reuse the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=15)" 2>/dev/null; then
  echo "SKIPPED: tinker: PyPI (https://pypi.org) cannot be reached from this machine"
  exit 0
fi
venv="${HOME}/.cache/dealgym/tinker-venv"
python3 -m venv "$venv"
pip="$venv/bin/pip --disable-pip-version-check"
$pip install -q -r crates/python/requirements-tinker.txt
# The tokenizer the token-exact tests use: tokenizer.json in this wheel (nothing of it imported).
$pip install -q --no-deps anthropic==0.34.2
# The README's line: pip builds the wheel with maturin (release) from this checkout (once per
# CI run: .ci/wheel.sh).
. .ci/wheel.sh
$pip install -q --force-reinstall --no-deps "$(dealgym_wheel "$pip")"
cargo build --locked -q
. .ci/no-skips.sh
DEALGYM_BIN="$PWD/target/debug/dealgym" pytest_none_skipped "$venv/bin/python" \
  crates/python/tests/test_tinker.py
