#!/usr/bin/env bash
# Regenerate scenarios/*.jsonl from the raw public datasets with the project's own importer.
# Usage: scripts/import-scenarios.sh [DATASETS_DIR]   (default: ../shared/datasets)
set -euo pipefail
D=${1:-../shared/datasets}
run() { cargo run --quiet --release -- scenarios import "$@"; }
run ahp "$D"/amazonhistoryprice/*.json --out scenarios/ahp.jsonl
# CraigslistBargains: the official test and validation files, and the train file where the
# official bundle's copy is there (it is missing from every copy we have; SOURCE.md says where it
# lives). Train comes last, so the ids of the other splits do not move; a listing in several
# splits stays in the evaluation split only.
cra=("$D"/craigslistbargains/test.json "$D"/craigslistbargains/validation.json)
if [ -f "$D"/craigslistbargains/train.json ]; then cra+=("$D"/craigslistbargains/train.json); fi
run craigslist "${cra[@]}" --out scenarios/craigslist.jsonl
run casino "$D"/casino/casino_train.json "$D"/casino/casino_valid.json "$D"/casino/casino_test.json --out scenarios/casino.jsonl
run dnd "$D"/dealornodeal/data.txt "$D"/dealornodeal/test.txt "$D"/dealornodeal/val.txt "$D"/dealornodeal/selfplay.txt --out scenarios/dnd.jsonl
run job_interview "$D"/job_interview/ji.test.json --out scenarios/job_interview.jsonl
# Families without a public data set are generated from their published parameters.
cargo run --quiet --release -- scenarios generate bundle --out scenarios/bundle.jsonl
# Generated from a paper's structure (no public data set): the REPO paper's hotel calls.
cargo run --quiet --release -- scenarios generate hotel --count 600 --seed 26 --out scenarios/hotel.jsonl
