#!/usr/bin/env bash
# Issue 33 on the Zen 4 VM (AVX-512): each model tuned for this CPU's own target at 512 trials
# with its best database's flags, then TVM and ORT parity and the alternated TVM / ORT runs.
# The steps are ../tvm-six-models-2026-11-27/run.sh's; only the records go here. On the Zen 3
# VM this would find the kept Zen 3 databases and tune nothing.
#
#   MODELS="squeezenet1_1 mobilenetv2_100" bash experiments/tvm-six-models-zen4-2026-11-27/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-models-zen4-2026-11-27 \
    WORK=results/experiments/tvm-six-models-zen4-2026-11-27 \
    MODELS=${MODELS:-"squeezenet1_1 mobilenetv2_100"} \
    bash experiments/tvm-six-models-2026-11-27/run.sh
