#!/usr/bin/env bash
# Issue 33: time between kernels in a tuned TVM network against ORT's between nodes, in one
# process (between.py), for the five models still slower than ORT, on their best databases.
# Then the kernels timed alone and summed against the wall (alone_sum.py). About 16 minutes
# on 2 cores.
#
#   bash experiments/tvm-between-kernels-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-between-kernels-2026-11-26
MODELS=${MODELS:-"mobilenetv2_100 efficientnet_b0 squeezenet1_1 swin_tiny_patch4_window7_224 resnet152"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
for m in $MODELS; do
    case $m in resnet152|swin_tiny_patch4_window7_224) calls=8 ;; *) calls=40 ;; esac
    step "$PY" "$HERE/between.py" --model "$m" --tuning-dir "$(tvm_best_db "$m")" --rounds 8 \
        --calls "$calls" \
        --json "$HERE/runs/$m.json" 2>&1 | grep -v '^\[[a-z]' | tee "$HERE/runs/$m.txt"
done
# The upper bound: wall against the kernels timed alone and summed (alone_sum.py), for the
# small networks where the between-kernel time matters most.
for m in ${ALONE_MODELS:-efficientnet_b0 mobilenetv2_100 squeezenet1_1}; do
    step "$PY" "$HERE/alone_sum.py" --model "$m" \
        --tuning-dir "$(tvm_best_db "$m")" \
        --json "$HERE/runs/$m-alone-sum.json" 2>&1 | grep -v '^\[[a-z]' \
        | tee "$HERE/runs/$m-alone-sum.txt"
done
