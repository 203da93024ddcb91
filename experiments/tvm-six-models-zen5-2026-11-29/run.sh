#!/usr/bin/env bash
# Issue 33 on a third kind of VM, the AMD EPYC Zen 5 (family 26 model 2, AVX-512 with full-width
# units; LLVM's znver5): each model tuned from nothing for this CPU's own target at 512 trials
# with its best database's flags (tvm_best_flags), then TVM and ORT parity and the alternated
# TVM / ORT runs. The steps are ../tvm-six-models-2026-11-27/run.sh's; only the records go here.
# The databases it tunes are kept (../tvm-databases/llvm-znver5-*/), so a rerun on a Zen 5
# restores them and only measures.
#
#   bash experiments/tvm-six-models-zen5-2026-11-29/run.sh
#   MODELS=squeezenet1_1 bash experiments/tvm-six-models-zen5-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-models-zen5-2026-11-29 \
    WORK=results/experiments/tvm-six-models-zen5-2026-11-29 \
    MODELS=${MODELS:-"squeezenet1_1 mobilenetv2_100 efficientnet_b0 resnet152 swin_tiny_patch4_window7_224 vgg16"} \
    REPS=${REPS:-4} \
    bash experiments/tvm-six-models-2026-11-27/run.sh
