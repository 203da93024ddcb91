#!/usr/bin/env bash
# Issue 33 on the Zen 5: is ResNet-152's gap the trial budget? run.sh's 512-trial database,
# copied, resumed to 1024 trials with the same flags (edgebench.tune --trials is a total), then
# every kernel beside ORT's node with the FMA ceiling (as profile.sh; runs/resnet152/
# kernels-zen5-1024.*) and the network against ORT in processes of their own, alternated, 4
# runs each (runs/resnet152/vs-ort-1024.*). The kept 512-trial database is left as run.sh made
# it. About 12 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-six-models-zen5-2026-11-29/budget.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-models-zen5-2026-11-29
WORK=results/experiments/tvm-six-models-zen5-2026-11-29
M=resnet152
RUNS=$HERE/runs/$M
DB=$WORK/budget-1024

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
if [ ! -f "$RUNS/tune-$M-1024.json" ]; then
    # run.sh tunes the Zen 5 database
    copy_best_db "$M" 'llvm-znver5-*' "$DB" > /dev/null || exit 1
    # shellcheck disable=SC2046  # the flags are a word list
    step "$PY" -m edgebench.tune --model "$M" --trials 1024 --tuning-dir "$DB" --no-reuse \
        $(tvm_best_flags "$M") --no-progress --summary "$RUNS/tune-$M-1024.json" \
        > "$WORK/tune-$M-1024.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$M-1024.log" > "$RUNS/tune-$M-1024.log"
fi
kernels_beside_ort "$M" "$DB" "$WORK" "$RUNS" zen5-1024 --ceilings "$WORK/bin"
step "$PY" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$M" \
    --tuning-dir "$DB" --arms ort,tvm --reps 4 --json "$RUNS/vs-ort-1024.json" 2>&1 \
    | tee "$RUNS/vs-ort-1024.txt"
