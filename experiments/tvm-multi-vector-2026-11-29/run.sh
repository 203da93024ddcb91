#!/usr/bin/env bash
# Issue 33 on the Zen 5: the design space with a two-vector channel tile beside the one-vector
# one (--design-space multi-vector). MLAS's 3x3 convs are about 10 % faster than TVM's tuned
# ones warm (../tvm-one-flush-2026-11-29/): with one 16-float vector of channels per pixel in
# the innermost tile, each broadcast input value feeds one FMA. For each model, from nothing:
# - tuned at 512 trials with its kept database's flags and --design-space multi-vector;
# - its network beside the kept Zen 5 database's, interleaved in one process;
# - against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort).
# About 15 minutes a model on the 2-core Zen 5 (ResNet-152, SqueezeNet 1.1, MobileNetV2 first).
#
#   bash experiments/tvm-multi-vector-2026-11-29/run.sh
#   MODELS="efficientnet_b0 vgg16" bash experiments/tvm-multi-vector-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-multi-vector-2026-11-29
WORK=results/experiments/tvm-multi-vector-2026-11-29  # git-ignored: the databases
MODELS=${MODELS:-"resnet152 squeezenet1_1 mobilenetv2_100"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    runs=$HERE/runs/$m
    mkdir -p "$runs" "$WORK/ort-$m"
    if [ ! -f "$runs/tune.json" ]; then
        # shellcheck disable=SC2046  # the flags are a word list
        step "$PY" -m edgebench.tune --model "$m" --trials 512 --tuning-dir "$WORK/multi" \
            --no-reuse $(tvm_best_flags "$m") --design-space multi-vector \
            --no-transfer --no-progress \
            --summary "$runs/tune.json" > "$WORK/tune-$m.log" 2>&1
        grep -v 'Fast mode segfaults' "$WORK/tune-$m.log" > "$runs/tune.log"
    fi
    networks_in_one_process "$m" "$runs/networks" "$(tvm_best_db "$m")" "$WORK/multi"
    [ -f "$runs/vs-ort.json" ] || tvm_against_ort "$m" "$WORK/multi" "$WORK/ort-$m" "$runs"
done
