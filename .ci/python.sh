#!/usr/bin/env bash
# The Python package (issue 22): builds the wheel from this checkout with maturin, the README's
# install line, into a venv under ~/.cache, and runs its pytest suite. Prints one SKIPPED line
# when PyPI cannot be reached; once it can, every failure is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/venv.sh
stage_venv "python package" python crates/python/requirements-test.txt tokenizer
"$venv/bin/python" -m pytest -q -p no:cacheprovider crates/python/tests
