#!/usr/bin/env bash
# Copy what run.sh left under results/ (git-ignored) into this folder: per model the check
# run's records and run.json, the tune summary, the profile, and the database's tuning.json
# (the databases themselves, about 10 MB each, stay out of git). Then print the table.
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=${WORK:-results/experiments/tvm-six-models-2026-11-25}
HERE=experiments/tvm-six-models-2026-11-25
cp "$WORK/cpu.txt" "$HERE/cpu.txt"
[ -f "$WORK/shared-workloads.json" ] && cp "$WORK/shared-workloads.json" "$HERE/"
mkdir -p "$HERE/ab"                       # the A/B scripts' --json files, where run by run_ab.sh
for f in "$WORK"/ab/*.json; do [ -f "$f" ] && cp "$f" "$HERE/ab/"; done
for d in "$WORK"/runs/*/; do
    m=$(basename "$d")
    mkdir -p "$HERE/runs/$m/tuned-512"
    for f in tuned-512/results.jsonl tuned-512/run.json tune-512.json profile-512.json profile-512.txt; do
        [ -f "$d/$f" ] && cp "$d/$f" "$HERE/runs/$m/$f"
    done
    t=$(find "$WORK"/tuning -mindepth 2 -maxdepth 2 -type d -name "$m-*" 2>/dev/null | head -1)
    [ -n "$t" ] && cp "$t/tuning.json" "$HERE/runs/$m/tuning.json"
done
.venv/bin/python benchmarks/tvm_models.py --report "$HERE/runs" --before experiments/tvm-six-models/runs
