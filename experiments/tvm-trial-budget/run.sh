#!/usr/bin/env bash
# Rerun "mobilenetv2_100: TVM tuned at 512 / 1024 / 2048 / 4096 trials against ONNX Runtime":
# one database grown by doubling budgets (each step on a copy of the one before), seeds 1 and 2
# at 512, the 8-per-round allocation at 512; then CHECKS rounds of check runs alternating over
# the databases (so neighbouring runs see the same machine state). About 1 h 40 min of
# tuning on 2 cores, plus about 1 min per check run.
#
#   bash experiments/tvm-trial-budget/run.sh
#   BUDGETS="512 1024" CHECKS=1 bash experiments/tvm-trial-budget/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                         # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-trial-budget} # git-ignored
MODEL=${MODEL:-mobilenetv2_100}
BUDGETS=${BUDGETS:-"512 1024 2048 4096"}
CHECKS=${CHECKS:-3}
# The 2026-11-23 databases were NCHW with MetaSchedule's default space; TUNE_FLAGS="" for
# today's CPU default (NHWC, vector-width tiling).
TUNE_FLAGS=${TUNE_FLAGS---layout NCHW --design-space default}
T=$WORK/tuning
mkdir -p "$WORK/summaries" "$WORK/runs"

tune() {   # tune TRIALS NAME [extra edgebench.tune options]: database $T/NAME
    local trials=$1 name=$2; shift 2
    # shellcheck disable=SC2086
    "$PY" -m edgebench.tune --model "$MODEL" --trials "$trials" --tuning-dir "$T/$name" \
        $TUNE_FLAGS --no-progress --summary "$WORK/summaries/tune-$name.json" "$@"
}
check() {  # check NAME RUN: the 1.5x-of-ORT check (TVM and ORT in one run) on $T/NAME
    "$PY" -m edgebench.full --models "$MODEL" --variants tvm onnxruntime --tasks parity latency \
        --tuning-dir "$T/$1" --out "$WORK/runs/$2" --resume
}

prev=""
for b in $BUDGETS; do                  # 512, then a copy resumed to 1024, to 2048, to 4096
    if [ -n "$prev" ] && [ ! -d "$T/b$b" ]; then cp -r "$T/b$prev" "$T/b$b"; fi
    tune "$b" "b$b"
    prev=$b
done
tune 512 seed1 --seed 1                # how much of a 512-trial result is luck
tune 512 seed2 --seed 2
tune 512 per-iter-8 --trials-per-iter 8     # 8 per task per round, then the gradient rule

for i in $(seq 1 "$CHECKS"); do
    for b in $BUDGETS; do check "b$b" "check-b$b-$i"; done
    check seed1 "check-seed1-$i"
done
"$PY" experiments/tvm-wide-vector/summarize_checks.py "$WORK/runs"
