#!/usr/bin/env bash
# The verifiers environment (issue 23, item 3): builds the wheel from this checkout with maturin
# (the README's install line) into its own venv under ~/.cache with verifiers pinned, and runs
# crates/python/tests/test_verifiers.py, which plays episodes through vf-eval against a live
# `dealgym mock`. Prints one SKIPPED line when PyPI cannot be reached (verifiers and the null
# harness's uv script come from it); once it can, every failure is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/venv.sh
stage_venv verifiers verifiers crates/python/requirements-verifiers.txt
# The venv's bin first: vf-eval, and the pinned uv the harness runs its chat program with.
PATH="$venv/bin:$PATH" pytest_none_skipped "$venv/bin/python" crates/python/tests/test_verifiers.py
