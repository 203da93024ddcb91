#!/usr/bin/env bash
# The lane's item3 on the emulated Orin with TVM compiled in the root (--tvm-untuned, smoke
# profile, all five variants) against TVM's three cells loading a library cross-compiled on
# the host (edgebench.tune --trials 0 --export). Records in runs/compiled-in-root and
# runs/host-exported; about 20 minutes on 2 cores. Needs jetson/emulated/setup.sh first.
#
#   bash experiments/emulated-lane-tvm-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/emulated-lane-tvm-2026-11-26
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
start_experiment "$HERE"
WORK=$(mktemp -d)
ONE=(--weights random --data "$PWD/datasets/sample" --max-images 1 --mlperf-min-duration 1)
step jetson/emulated/run.sh python -m edgebench.full --models squeezenet1_1 \
    --variants pytorch onnxruntime onnxruntime-int8 jax tvm --tasks parity latency singlestream \
    --tvm-untuned --mlperf-min-queries 4 --int8-calib-images 4 --profile smoke "${ONE[@]}" \
    --out "$WORK/compiled-in-root"
step "$PY" -m edgebench.tune --model squeezenet1_1 --target jetson-agx-orin-cpu --trials 0 \
    --export "$WORK/orin-untuned" --tuning-dir "$WORK/tuning" --weights random --no-progress
step jetson/emulated/run.sh python -m edgebench.full --models squeezenet1_1 --variants tvm \
    --tasks parity latency singlestream --tvm-artifact "$WORK/orin-untuned" \
    --mlperf-min-queries 4 "${ONE[@]}" --out "$WORK/host-exported"
for arm in compiled-in-root host-exported; do
    mkdir -p "$HERE/runs/$arm"
    cp "$WORK/$arm/results.jsonl" "$WORK/$arm/run.json" "$HERE/runs/$arm/"
done
