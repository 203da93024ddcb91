#!/usr/bin/env bash
# Your own model, three ways, with every variant that runs on this machine: a timm ResNet-18
# fine-tuned with a 5-class head, the example factory (examples/own_model/tiny_cnn.py:build)
# with its trained checkpoint, and that network's two-output ONNX export. Data: 5 classes of
# real photos (crops of the bundled calibration photographs, 4 per class), the same the
# checkpoints were trained on: the Top-1 here says the pipeline reads the classes right, not
# how well the models generalise. TVM is tuned with the plain command on the same model
# argument (TRIALS, default 64 each: a short budget, said in the table). table.py makes
# table.md from the records. About 10 minutes on 2 cores. From the repository root:
#
#   bash experiments/own-model-2026-12-05/run.sh
#   bash experiments/own-model-2026-12-05/run.sh --dry-run     # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
HERE=experiments/own-model-2026-12-05
PY=${PY:-.venv/bin/python}
WORK=results/experiments/own-model
DATA=$WORK/photos
OUT=$WORK/run
TRIALS=${TRIALS:-64}
if [ "$DRY" = 0 ]; then
  mkdir -p "$WORK"
  for c in brick coins grass gravel horse; do
    mkdir -p "$DATA/$c"
    cp datasets/calibration/${c}_*.JPEG "$DATA/$c/"
  done
else
  echo "+ cp datasets/calibration/{brick,coins,grass,gravel,horse}_*.JPEG $DATA/<class>/" >&3
fi
step "$PY" examples/own_model/train.py --data "$DATA" --out "$WORK/r18.pt" --arch resnet18 --epochs 5
step "$PY" examples/own_model/train.py --data "$DATA" --out "$WORK/tiny.pt" --epochs 10
step "$PY" examples/own_model/export_onnx.py --out "$WORK/tiny_two_heads.onnx" --two-heads \
  --weights "$WORK/tiny.pt"
COMMON=(--data "$DATA" --max-images 16 --variants pytorch pytorch-compile onnxruntime
        onnxruntime-int8 tvm jax --tuning-dir "$WORK/tuning" --cache-dir "$WORK/cache")
step "$PY" -m edgebench.tune --model resnet18 --num-classes 5 --weights "$WORK/r18.pt" \
    --trials "$TRIALS" --tuning-dir "$WORK/tuning" --cache-dir "$WORK/cache" --no-progress
step "$PY" -m edgebench.tune --model tiny_cnn:build --model-path examples/own_model --input-size 3x64x64 \
    --weights "$WORK/tiny.pt" --trials "$TRIALS" --tuning-dir "$WORK/tuning" --cache-dir "$WORK/cache" --no-progress
step "$PY" -m edgebench.tune --model "$WORK/tiny_two_heads.onnx" \
    --trials "$TRIALS" --tuning-dir "$WORK/tuning" --cache-dir "$WORK/cache" --no-progress
step "$PY" -m edgebench.full --models resnet18 --num-classes 5 --weights "$WORK/r18.pt" \
    "${COMMON[@]}" --out "$OUT-timm-head"
step "$PY" -m edgebench.full --models tiny_cnn:build --model-path examples/own_model --input-size 3x64x64 \
    --weights "$WORK/tiny.pt" "${COMMON[@]}" --out "$OUT-factory"
step "$PY" -m edgebench.full --models "$WORK/tiny_two_heads.onnx" "${COMMON[@]}" --out "$OUT-onnx"
if [ "$DRY" = 0 ]; then
  for k in timm-head factory onnx; do
    mkdir -p "$HERE/$k"
    cp "$OUT-$k/results.jsonl" "$OUT-$k/report.md" "$HERE/$k/"
  done
fi
run_cmd "$PY" "$HERE/table.py" "$HERE"/{timm-head,factory,onnx}/results.jsonl | tee "$(sink "$HERE/table.md")"
