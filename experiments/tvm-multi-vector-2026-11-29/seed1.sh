#!/usr/bin/env bash
# Issue 33 on the Zen 5: a second session of run.sh's ResNet-152 command with --seed 1 (the
# tuner's seed; its random weights too, which do not change the workloads), and the three
# networks interleaved in one process: the kept Zen 5 database, run.sh's (seed 0) and this one.
# Is run.sh's 0.942x one lucky session? About 10 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-multi-vector-2026-11-29/seed1.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-multi-vector-2026-11-29
WORK=results/experiments/tvm-multi-vector-2026-11-29  # git-ignored: the databases
M=resnet152
RUNS=$HERE/runs/$M

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS"
if [ ! -f "$RUNS/tune-seed1.json" ]; then
    # shellcheck disable=SC2046  # the flags are a word list
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/multi-seed1" \
        --no-reuse $(tvm_best_flags "$M") --design-space multi-vector \
        --no-transfer --seed 1 --no-progress \
        --summary "$RUNS/tune-seed1.json" > "$WORK/tune-$M-seed1.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$M-seed1.log" > "$RUNS/tune-seed1.log"
fi
networks_in_one_process "$M" "$RUNS/networks-seed1" "$(tvm_best_db "$M")" "$WORK/multi" \
    "$WORK/multi-seed1"
