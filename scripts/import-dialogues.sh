#!/usr/bin/env bash
# Regenerate dialogues/*.jsonl — the datasets' own human dialogues as episode records — with the
# project's importer, on the scenarios in scenarios/. Prints the import table (docs/src/data/dialogues.md,
# "Human dialogues"). The files are generated data: git ignores dialogues/.
# Usage: scripts/import-dialogues.sh [DATASETS_DIR]   (default: ../shared/datasets)
set -euo pipefail
D=${1:-../shared/datasets}
cargo run --quiet --release -- dialogues import --datasets "$D" --scenarios scenarios --out dialogues
