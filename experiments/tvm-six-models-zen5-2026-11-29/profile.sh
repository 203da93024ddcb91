#!/usr/bin/env bash
# Issue 33 on the Zen 5: where the time goes for the models above ORT's p50 after run.sh.
# - MODELS (default SqueezeNet 1.1, MobileNetV2): each tuned module's per-kernel profile beside
#   ORT's profile of the same model, in one process with the wall times in ABBA rounds
#   (benchmarks/tvm_profile.py, via ../tvm-six-models-zen4-2026-11-27/profile.sh);
#   runs/<model>/profile.*.
# - ResNet-152: every kernel warm, cold and in the network beside ORT's node, both walls, and in
#   every round the machine's FMA ceiling and MLAS's SGEMM (lib.sh's kernels_beside_ort with
#   --ceilings, as ../tvm-resnet152-roofline-2026-11-28/ did on the Zen 4);
#   runs/resnet152/kernels-zen5.*, kept on a rerun.
#
#   bash experiments/tvm-six-models-zen5-2026-11-29/profile.sh
#   MODELS=squeezenet1_1 bash experiments/tvm-six-models-zen5-2026-11-29/profile.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-models-zen5-2026-11-29
WORK=results/experiments/tvm-six-models-zen5-2026-11-29

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK/bin" "$HERE/runs/resnet152"
kernels_beside_ort resnet152 "$(tvm_best_db resnet152)" "$WORK" "$HERE/runs/resnet152" zen5 \
    --ceilings "$WORK/bin"
HERE=$HERE MODELS=${MODELS:-"squeezenet1_1 mobilenetv2_100"} \
    bash experiments/tvm-six-models-zen4-2026-11-27/profile.sh
