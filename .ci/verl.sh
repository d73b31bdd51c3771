#!/usr/bin/env bash
# The verl adapter (dealgym.verl, issue 23): a venv under ~/.cache with the pinned verl 0.9.1 and
# what it resolves to (crates/python/requirements-verl.txt: torch, transformers, ray, ... and the
# modules verl imports without declaring them), the package built from this checkout as
# .ci/python.sh builds it, then test_verl.py: verl's own RLHFDataset and AgentLoopWorker with a
# fake server manager standing in for the GPU inference servers, which CI has none of. Prints one
# SKIPPED line when PyPI cannot be reached; once it can, every failure is a failure. torch (with its
# CUDA wheels, about 5 GB) is the one the trainer venvs share (.ci/venv.sh); later runs reuse
# the venv.
#
# verl's wheel installs top-level `tests` and `scripts` packages into site-packages. pytest runs
# here in its default (prepend) import mode on crates/python/tests, which has no __init__.py, so
# the test modules import as top-level `conftest`/`test_verl` and never as `tests.*`, where
# verl's package would win over ours.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/venv.sh
stage_venv verl verl crates/python/requirements-verl.txt tokenizer
pytest_none_skipped "$venv/bin/python" crates/python/tests/test_verl.py
