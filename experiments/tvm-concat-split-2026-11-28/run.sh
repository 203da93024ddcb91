#!/usr/bin/env bash
# Issue 33: SqueezeNet 1.1 with its channel concats moved into their consumers
# (converters/tvm/concat_split.py; edgebench.tune --concat split, the default for new
# CPU databases), against the kept Zen 4 database (the concats as kernels) and ONNX Runtime.
#   1. tune from nothing at 512 trials with today's defaults (about 5 min on the 2-core Zen 4);
#   2. the kept database (concat keep) and the new one (split) built and timed in alternating
#      rounds in one process (benchmarks/tvm_databases.py);
#   3. tvm_against_ort (lib.sh): TVM and ORT parity in one suite run; the new database against
#      ORT, each in processes of their own, alternated (pool_vs_ort.py compare, 4 runs each);
#      its per-kernel profile beside ORT's (benchmarks/tvm_profile.py).
# About 9 minutes (the 02:02 run).
#
#   bash experiments/tvm-concat-split-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-concat-split-2026-11-28
WORK=results/experiments/tvm-concat-split-2026-11-28   # git-ignored: the new database
M=squeezenet1_1

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK" "$HERE/runs"
kept=$(tvm_best_db "$M")
step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning" --no-reuse \
    --concat split --no-progress --summary "$HERE/runs/tune.json" > "$WORK/tune.log" 2>&1
grep -v 'Fast mode segfaults' "$WORK/tune.log" > "$HERE/runs/tune.log"
cp "$WORK"/tuning/*/"$M"-*/tuning.json "$HERE/runs/tuning.json"
step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$kept" "$WORK/tuning" \
    --json "$HERE/runs/keep-vs-split.json" 2>&1 | grep -v 'Fast mode segfaults' \
    | tee "$HERE/runs/keep-vs-split.txt"
tvm_against_ort "$M" "$WORK/tuning" "$WORK" "$HERE/runs" "${REPS:-4}"
