#!/usr/bin/env bash
# Rerun "TVM across the six study models" with today's defaults (NHWC on CPUs, vector-width
# tiling, no transfer; no reuse across models, which came later): per model a 512-trial tuning session, then TVM and ONNX Runtime parity
# + latency in one run with that database, then a per-kernel profile of the tuned module
# beside ORT's (benchmarks/tvm_profile.py); then the table. Long: 15-45 min of tuning per
# model on 2 cores. Rerunning continues where it stopped (tuning resumes, runs use --resume).
# Touch $WORK/PAUSE to hold it between steps (e.g. to run the tests on a quiet machine).
#
#   bash experiments/tvm-six-models-2026-11-25/run.sh
#   MODELS="squeezenet1_1" bash experiments/tvm-six-models-2026-11-25/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-six-models-2026-11-25}   # git-ignored
OUT=${OUT:-$WORK/runs}
TUNING_DIR=${TUNING_DIR:-$WORK/tuning}
MODELS=${MODELS:-"mobilenetv2_100 squeezenet1_1 efficientnet_b0 resnet152 vgg16 swin_tiny_patch4_window7_224"}
TRIALS=${TRIALS:-512}
# The 2026-11-25 runs predate reuse across models (vgg16 ran with --no-reuse): TUNE_FLAGS=""
# tunes with today's defaults, reuse included.
TUNE_FLAGS=${TUNE_FLAGS---no-reuse}
export PYTHONPATH=$PWD

hold() { while [ -e "$WORK/PAUSE" ]; do sleep 5; done; }
step() { hold; echo "[$(date -u +%H:%M:%S)] $*"; "$@"; echo "[$(date -u +%H:%M:%S)] rc $?"; }

mkdir -p "$WORK"
grep -m1 "model name" /proc/cpuinfo > "$WORK/cpu.txt"
for m in $MODELS; do
    d=$OUT/$m
    mkdir -p "$d"
    # shellcheck disable=SC2086
    step "$PY" -m edgebench.tune --model "$m" --trials "$TRIALS" --tuning-dir "$TUNING_DIR" \
        $TUNE_FLAGS --no-progress --summary "$d/tune-$TRIALS.json" > "$d/tune-$TRIALS.log" 2>&1
    step "$PY" -m edgebench.full --models "$m" --variants tvm onnxruntime --tasks parity latency \
        --tuning-dir "$TUNING_DIR" --out "$d/tuned-$TRIALS" --resume > "$d/tuned-$TRIALS.log" 2>&1
    step "$PY" benchmarks/tvm_profile.py --model "$m" --tuning-dir "$TUNING_DIR" \
        --json "$d/profile-$TRIALS.json" > "$d/profile-$TRIALS.txt" 2>&1
done
"$PY" benchmarks/tvm_models.py --report "$OUT"      # the README's table, from the records
