#!/usr/bin/env bash
# Issue 33, after rerank.sh: the same warm and cold re-ranks (K=8, no new trials) of the other
# models' kept Zen 4 databases (../tvm-input-conv-2026-11-28/'s copies), each model's three
# networks interleaved in one process (benchmarks/tvm_databases.py). Do cold measurements
# help where the weights fit in the 32 MB L3 (MobileNetV2 14 MB, SqueezeNet 1.1 5 MB,
# EfficientNet-B0 21 MB) as where they do not (VGG16 553 MB, Swin-T 113 MB)? About 6-10
# minutes a model on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-zen4-2026-11-28/rerank_models.sh
#   MODELS="vgg16" bash experiments/tvm-resnet152-zen4-2026-11-28/rerank_models.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-zen4-2026-11-28
WORK=results/experiments/tvm-resnet152-zen4-2026-11-28   # git-ignored: the databases
K=${K:-8}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
for M in ${MODELS:-vgg16 mobilenetv2_100 swin_tiny_patch4_window7_224 efficientnet_b0 squeezenet1_1}; do
    kept=results/experiments/tvm-input-conv-2026-11-28/$M/tuning
    [ -d "$kept" ] || { echo "$M: no kept database in $kept (../tvm-input-conv-2026-11-28/run.sh)"; continue; }
    mkdir -p "$HERE/runs/$M"
    for caches in warm cold; do
        [ -f "$HERE/runs/$M/rerank-$caches.json" ] || rerank_copy "$M" "$kept" \
            "$WORK/$M/kept-rerank-$caches" "$caches" "$HERE/runs/$M/rerank-$caches" "$K"
    done
    [ -f "$HERE/runs/$M/kept-reranked.json" ] ||
        step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$kept" \
            "$WORK/$M/kept-rerank-warm" "$WORK/$M/kept-rerank-cold" \
            --json "$HERE/runs/$M/kept-reranked.json" 2>&1 \
            | grep -v 'Fast mode segfaults' | tee "$HERE/runs/$M/kept-reranked.txt"
done
