#!/usr/bin/env bash
# The Tinker cookbook adapter (dealgym.tinker, issue 23): a venv under ~/.cache with the pinned
# tinker-cookbook 0.5.8 and tinker 0.38.0 (crates/python/requirements-tinker.txt; torch comes with
# the cookbook), the package built from this checkout as .ci/python.sh builds it, then
# test_tinker.py: the cookbook's own rollout code with a scripted stand-in for Tinker's sampling
# client, whose service cannot be reached from CI. Prints one SKIPPED line when PyPI cannot be
# reached; once it can, every failure is a failure. torch (with its CUDA wheels, about 5 GB) is
# the one the trainer venvs share (.ci/venv.sh); the venv itself is about 1.3 GB, and later runs
# reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/venv.sh
stage_venv tinker tinker crates/python/requirements-tinker.txt tokenizer
pytest_none_skipped "$venv/bin/python" crates/python/tests/test_tinker.py
