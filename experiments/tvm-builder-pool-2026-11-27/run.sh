#!/usr/bin/env bash
# The tuner's builder with a new worker pool for every batch (--builder-pool fresh, MetaSchedule's
# LocalBuilder) against one pool kept between batches (--builder-pool kept), on this CPU:
# MODEL tuned from nothing to TRIALS trials (--no-reuse) in a fresh tuning dir per session,
# the arms alternated fresh, kept, kept, fresh (ABBA). Each session's tuning.json says where
# its time went (phases: search, build, run, learn, speed probe) and how many batches it
# measured (machine_speed samples); summary.py prints the table. About 20 minutes on 2 cores.
#
#   bash experiments/tvm-builder-pool-2026-11-27/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-builder-pool-2026-11-27
WORK=${WORK:-results/experiments/tvm-builder-pool-2026-11-27}      # git-ignored
MODEL=${MODEL:-mobilenetv2_100}
TRIALS=${TRIALS:-128}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
start_experiment "$HERE"
mkdir -p "$HERE/runs"
rm -rf "$WORK"
n=0
for pool in fresh kept kept fresh; do
    n=$((n + 1))
    name=$n-$pool
    step "$PY" -m edgebench.tune --model "$MODEL" --trials "$TRIALS" --no-reuse --no-progress \
        --builder-pool "$pool" --tuning-dir "$WORK/$name" --summary "$HERE/runs/$name.json" \
        > "$HERE/runs/$name.log" 2>&1
    cp "$(find "$WORK/$name" -name tuning.json | head -1)" "$HERE/runs/$name-tuning.json"
done
"$PY" "$HERE/summary.py" "$HERE"/runs/*-tuning.json | tee "$HERE/summary.txt"
