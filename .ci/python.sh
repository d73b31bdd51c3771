#!/usr/bin/env bash
# The Python package (issue 22): builds the wheel from this checkout with maturin, the README's
# install line, into a venv under ~/.cache, and runs its pytest suite. Prints one SKIPPED line
# when PyPI cannot be reached; once it can, every failure is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=15)" 2>/dev/null; then
  echo "SKIPPED: python package: PyPI (https://pypi.org) cannot be reached from this machine"
  exit 0
fi
venv="${HOME}/.cache/dealgym/python-venv"
python3 -m venv "$venv"
pip="$venv/bin/pip --disable-pip-version-check"
$pip install -q -r crates/python/requirements-test.txt
# A real tokenizer for the token-exact tests: the wheel ships tokenizer.json (a 65,000-token
# BPE); nothing of the package is imported, so none of its dependencies are installed.
$pip install -q --no-deps anthropic==0.34.2
# The README's line: pip builds the wheel with maturin (release) from this checkout (once per
# CI run: .ci/wheel.sh).
. .ci/wheel.sh
$pip install -q --force-reinstall --no-deps "$(dealgym_wheel "$pip")"
cargo build --locked -q
DEALGYM_BIN="$PWD/target/debug/dealgym" "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/python/tests
