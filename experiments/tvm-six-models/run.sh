#!/usr/bin/env bash
# Rerun "TVM across the six study models": per model, untuned TVM latency, a 512-trial tuning
# session, then TVM and ONNX Runtime parity + latency in one run with that database; then the
# table. Long: 10-25 min of tuning per model on 2 cores, and untuned VGG16 / Swin-T take
# seconds per call. Rerunning continues where it stopped (tuning resumes, runs use --resume).
#
#   bash experiments/tvm-six-models/run.sh
#   MODELS="mobilenetv2_100 squeezenet1_1" TRIALS=1024 bash experiments/tvm-six-models/run.sh
#   TUNE_FLAGS="" bash experiments/tvm-six-models/run.sh     # today's CPU default space instead
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                         # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-six-models}   # git-ignored
OUT=${OUT:-$WORK/runs}                              # run directories, one folder per model
TUNING_DIR=${TUNING_DIR:-$WORK/tuning}              # the databases (about 10 MB per model)
MODELS=${MODELS:-"mobilenetv2_100 squeezenet1_1 efficientnet_b0 resnet152 vgg16 swin_tiny_patch4_window7_224"}
TRIALS=${TRIALS:-512}
# The 2026-11-22 databases were tuned in NCHW with MetaSchedule's default space (the only
# choice then); today's CPU default is NHWC with vector-width tiling.
TUNE_FLAGS=${TUNE_FLAGS---layout NCHW --design-space default}

for m in $MODELS; do
    d=$OUT/$m
    mkdir -p "$d"
    "$PY" -m edgebench.full --models "$m" --variants tvm --tasks latency --tvm-untuned \
        --tuning-dir "$d/no-tuning" --out "$d/untuned" --resume
    # shellcheck disable=SC2086
    "$PY" -m edgebench.tune --model "$m" --trials "$TRIALS" --tuning-dir "$TUNING_DIR" $TUNE_FLAGS \
        --no-progress --summary "$d/tune-$TRIALS.json"
    "$PY" -m edgebench.full --models "$m" --variants tvm onnxruntime --tasks parity latency \
        --tuning-dir "$TUNING_DIR" --out "$d/tuned-$TRIALS" --resume
done
"$PY" benchmarks/tvm_models.py --report "$OUT"      # the README's table, from the records
