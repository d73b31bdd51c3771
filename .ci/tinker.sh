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
. .ci/venv.sh
stage_venv tinker tinker crates/python/requirements-tinker.txt tokenizer
pytest_none_skipped "$venv/bin/python" crates/python/tests/test_tinker.py
