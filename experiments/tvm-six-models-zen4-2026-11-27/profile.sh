#!/usr/bin/env bash
# Issue 33: where the time goes for the models still above ORT's p50 after run.sh, each tuned
# module's per-kernel profile beside ORT's profile of the same model, in one process with the
# wall times in ABBA rounds (benchmarks/tvm_profile.py). 21-122 s per model on the 2-core Zen 4.
#
#   MODELS="squeezenet1_1" bash experiments/tvm-six-models-zen4-2026-11-27/profile.sh
#   HERE=experiments/OTHER bash .../profile.sh       # records into OTHER/runs/<model>/
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=${HERE:-experiments/tvm-six-models-zen4-2026-11-27}
MODELS=${MODELS:-"squeezenet1_1 efficientnet_b0 resnet152"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
for m in $MODELS; do
    step "$PY" benchmarks/tvm_profile.py --model "$m" --tuning-dir "$(tvm_best_db "$m")" \
        --json "$HERE/runs/$m/profile.json" 2>&1 \
        | grep -v -e '^\[[a-z]' -e 'Fast mode segfaults' | tee "$HERE/runs/$m/profile.txt"
done
