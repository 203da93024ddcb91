#!/usr/bin/env bash
# Issue 33 on the Zen 4 VM (AVX-512): each model tuned for this CPU's own target at 512 trials
# with its best database's flags, then TVM and ORT parity and the alternated TVM / ORT runs.
# The steps are ../tvm-six-models-2026-11-27/run.sh's; only the records go here. The six
# databases it tuned are kept (../tvm-databases/llvm-znver4-95faa33f/), so a rerun on a Zen 4
# restores them and only measures; on a CPU without kept databases it tunes each model first
# (5-14 min per model on the Zen 4). The records here came from two runs: MODELS="squeezenet1_1
# mobilenetv2_100", then the other four.
#
#   bash experiments/tvm-six-models-zen4-2026-11-27/run.sh
#   MODELS=squeezenet1_1 bash experiments/tvm-six-models-zen4-2026-11-27/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-models-zen4-2026-11-27 \
    WORK=results/experiments/tvm-six-models-zen4-2026-11-27 \
    MODELS=${MODELS:-"squeezenet1_1 mobilenetv2_100 efficientnet_b0 resnet152 swin_tiny_patch4_window7_224 vgg16"} \
    bash experiments/tvm-six-models-2026-11-27/run.sh
