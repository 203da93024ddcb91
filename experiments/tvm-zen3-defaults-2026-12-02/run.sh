#!/usr/bin/env bash
# Issue 33 on the AVX2 Zen 3 (family 25 model 1; LLVM's znver3): the three study models that
# ../tvm-recipes-zen3-2026-12-01/ left out, tuned from nothing with today's defaults. Their
# kept Zen 3 databases (tvm_best_db) are from 11-25 to 11-27, before the defaults of 11-28 on
# (the input conv, padded out-channels, the pool sketch); on 11-27 they read EfficientNet-B0
# 1.118x, Swin-T 1.219x and VGG16 1.006x ORT's p50. Each here gets its Zen 5 best database's
# flags (docs/tvm.md, "Best so far on the Zen 5"): the defaults, and --conv2d winograd for
# VGG16. 512 trials each, in one tuning dir; then each network beside the kept database's in
# one process, and against ORT: parity, 4 alternated runs, the per-kernel profile
# (tvm_against_ort). The databases are kept in ../tvm-databases/zen3-defaults/ and restored on
# a rerun. Tuning took 30-40 minutes a model on this VM on 11-25 to 11-27 (VGG16 31, Swin-T 40).
#
#   bash experiments/tvm-zen3-defaults-2026-12-02/run.sh
#   MODELS="swin_tiny_patch4_window7_224 vgg16" bash experiments/tvm-zen3-defaults-2026-12-02/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-zen3-defaults-2026-12-02
WORK=results/experiments/tvm-zen3-defaults-2026-12-02   # git-ignored: the databases
MODELS=${MODELS:-"efficientnet_b0"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

# recipe MODEL: the flags of MODEL's best Zen 5 database
recipe() {
    case $1 in
        vgg16) echo "--conv2d winograd" ;;
        *) echo "" ;;
    esac
}

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    restore_tvm_db "$m" "$WORK/tuning" experiments/tvm-databases/zen3-defaults
done
for m in $MODELS; do
    # shellcheck disable=SC2046  # a word list
    tune_then_measure "$m" "$WORK" "$HERE/runs/$m" $(recipe "$m")
done
