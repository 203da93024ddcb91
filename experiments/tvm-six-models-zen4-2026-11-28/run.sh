#!/usr/bin/env bash
# Issue 33 on the Zen 4 VM, 2026-11-28: the six models' best databases for this CPU against ONNX
# Runtime on one day, SqueezeNet 1.1's now the one tuned with --concat split --out-channels pad
# (../tvm-pad-channels-2026-11-28/). Measures only: the databases are kept
# (../tvm-databases/llvm-znver4-95faa33f/) and complete. The steps are
# ../tvm-six-models-2026-11-27/run.sh's (parity in one suite run, then ORT and TVM alternated in
# processes of their own), with 6 runs each; only the records go here.
#
#   bash experiments/tvm-six-models-zen4-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-models-zen4-2026-11-28 \
    WORK=results/experiments/tvm-six-models-zen4-2026-11-28 \
    MODELS=${MODELS:-"squeezenet1_1 mobilenetv2_100 efficientnet_b0 resnet152 swin_tiny_patch4_window7_224 vgg16"} \
    REPS=${REPS:-6} \
    bash experiments/tvm-six-models-2026-11-27/run.sh
