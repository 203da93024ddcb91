#!/usr/bin/env bash
# Issue 33: for each model still slower than ORT, its heaviest kernels with trials to spare
# (ceiling.py: +EXTRA candidates per task on a copy of its best database, top records
# re-ranked) against ORT's node for the same operator shapes, in one process. About 10
# minutes per model on 2 cores. The databases must exist (../tvm-six-models-2026-11-25/run.sh,
# ../tvm-allocation-2026-11-26/run.sh for resnet152's).
#
#   bash experiments/tvm-kernel-ceiling-2026-11-26/run.sh
#   MODELS="squeezenet1_1" EXTRA=64 bash experiments/tvm-kernel-ceiling-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
PY=${PY:-.venv/bin/python}
HERE=experiments/tvm-kernel-ceiling-2026-11-26
WORK=${WORK:-results/experiments/tvm-kernel-ceiling-2026-11-26}   # git-ignored copies
MODELS=${MODELS:-"resnet152 swin_tiny_patch4_window7_224 squeezenet1_1 efficientnet_b0 mobilenetv2_100"}
EXTRA=${EXTRA:-160}
TOP=${TOP:-2}
export PYTHONPATH=$PWD

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

mkdir -p "$HERE/runs" "$WORK"
record_cpu "$HERE/cpu.txt"
for m in $MODELS; do
    step "$PY" "$HERE/ceiling.py" --model "$m" --from "$(tvm_best_db "$m")" --to "$WORK/tuning" \
        --top "$TOP" --extra "$EXTRA" --json "$HERE/runs/$m.json" 2> "$WORK/$m.log" \
        | tee "$HERE/runs/$m.txt"
    # the copy's sessions: the extra trials' count and seconds per task
    t=$(find "$WORK/tuning" -mindepth 2 -maxdepth 2 -type d -name "$m-*" | head -1)
    [ -n "$t" ] && cp "$t/tuning.json" "$HERE/runs/$m-tuning.json"
done
