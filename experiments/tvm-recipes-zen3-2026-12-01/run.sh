#!/usr/bin/env bash
# Issue 33 back on the AVX2 Zen 3 (family 25 model 1; LLVM's znver3; 8-float vectors): do
# the recipes found on the Zen 5 (2026-11-29) carry to a CPU without AVX-512? The kept Zen 3
# databases (experiments/tvm-databases/llvm-znver3-*/) are from 11-25 to 11-27, before the
# multi-vector space, cost-model transfer in it, pad-pair, the pool sketch, winograd-fit and
# the input/concat/out-channel defaults; they read 1.0-1.85x ORT's p50 on 11-27.
# The three models whose Zen 5 best needed new flags, tuned from nothing in one tuning dir
# (so each session pre-trains its cost model on the ones before: the multi-vector default),
# in this order, 512 trials each, with their Zen 5 best databases' flags:
#   mobilenetv2_100  --design-space multi-vector
#   squeezenet1_1    --design-space multi-vector --conv2d winograd --out-channels pad-pair
#                    --allocation measured
#   resnet152        --design-space multi-vector --conv2d winograd-fit --allocation measured
#                    --runner-caches cold
# The databases are kept in experiments/tvm-databases/recipes-zen3/. For each: its network
# beside the kept Zen 3 database's, interleaved in one process, then against ORT (parity, 4
# alternated runs, a per-kernel profile: tvm_against_ort). Last, the other three models' kept
# Zen 3 databases against ORT, 4 alternated runs each (SITTING=0 leaves them out). On the
# 2-core Zen 3 (2026-12-01): 75 minutes of tuning, 34 of measuring up to ResNet-152's runs
# against ORT (20 of them ResNet-152's); its profile (added on 12-02, 5 minutes) and the last
# step did not run then.
#
#   bash experiments/tvm-recipes-zen3-2026-12-01/run.sh
#   MODELS=squeezenet1_1 SITTING=0 bash experiments/tvm-recipes-zen3-2026-12-01/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-recipes-zen3-2026-12-01
WORK=results/experiments/tvm-recipes-zen3-2026-12-01   # git-ignored: the databases
MODELS=${MODELS:-"mobilenetv2_100 squeezenet1_1 resnet152"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-six-best-zen5-2026-11-29/best.sh
. experiments/tvm-six-best-zen5-2026-11-29/best.sh    # sitting

# recipe MODEL: the flags of MODEL's best Zen 5 database (docs/tvm.md, "Best so far on the
# Zen 5"), less the --transfer-from of other Zen 5 databases: here the tuning dir's earlier
# databases stand in for them
recipe() {
    case $1 in
        mobilenetv2_100) echo "--design-space multi-vector" ;;
        squeezenet1_1) echo "--design-space multi-vector --conv2d winograd --out-channels pad-pair --allocation measured" ;;
        resnet152) echo "--design-space multi-vector --conv2d winograd-fit $(tvm_best_flags resnet152)" ;;
    esac
}

start_experiment "$HERE"
mkdir -p "$WORK"
# the databases tuned here, kept (a rerun on a Zen 3 then only measures what is missing)
for m in $MODELS; do
    restore_tvm_db "$m" "$WORK/tuning" experiments/tvm-databases/recipes-zen3
done
for m in $MODELS; do
    # shellcheck disable=SC2046  # a word list
    tune_then_measure "$m" "$WORK" "$HERE/runs/$m" $(recipe "$m")
done

# the kept Zen 3 databases of the other three (tvm_best_db), as 11-27's sitting measured them
best_db() { tvm_best_db "$1"; }
[ "${SITTING:-1}" = 0 ] || sitting "$HERE/runs/kept" \
    "vgg16 efficientnet_b0 swin_tiny_patch4_window7_224"
