#!/usr/bin/env bash
# Issue 33: TVM's thread pool settings against a tuned network's wall time, each arm a
# process of its own, ABBA (threadpool.py). About 3 minutes of builds and 6 of timing per
# model on 2 cores.
#
#   bash experiments/tvm-threadpool-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-threadpool-2026-11-26
MODELS=${MODELS:-"efficientnet_b0 mobilenetv2_100"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
for m in $MODELS; do
    step "$PY" "$HERE/threadpool.py" build --model "$m" --tuning-dir "$(tvm_best_db "$m")" 2>&1 \
        | grep -v '^\[[a-z]'
done
for m in $MODELS; do
    step "$PY" "$HERE/threadpool.py" compare --model "$m" --reps "${REPS:-4}" \
        --json "$HERE/runs/$m.json" 2>&1 | tee "$HERE/runs/$m.txt"
done
