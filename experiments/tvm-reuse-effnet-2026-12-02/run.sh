#!/usr/bin/env bash
# Issue 33: did reuse mislead EfficientNet-B0's search on 2026-12-02? That session
# (../tvm-six-recipes-2026-12-02/) copied 77 records of 6 shared kernels from MobileNetV2's
# multi-vector database, trained its cost model on them first, and built a network 1.33x
# slower than the 11-29 database (tuned without reuse) in one process.
#
# Four sessions from nothing, 512 trials, arms alternated (ABBA: reuse seed 0, no reuse seed 0,
# no reuse seed 1, reuse seed 1). Each arm's tuning dir holds the same five sibling databases of
# 12-02 (restored from ../tvm-databases/six-recipes/), so the flag is the only difference:
#
#   python -m edgebench.tune --model efficientnet_b0 --trials 512 --seed S [--no-reuse]
#
# Then the four networks, 12-02's and 11-29's, in one process (benchmarks/tvm_databases.py,
# interleaved rounds): runs/networks.*. About an hour of tuning on the 2-core Zen 5.
#
#   bash experiments/tvm-reuse-effnet-2026-12-02/run.sh
#
# A rerun keeps what is recorded (runs/ARM/tune.json, runs/networks.json).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-reuse-effnet-2026-12-02
WORK=results/experiments/tvm-reuse-effnet-2026-12-02   # git-ignored
SIX=experiments/tvm-databases/six-recipes
M=efficientnet_b0
ARMS=${ARMS:-"reuse-s0 noreuse-s0 noreuse-s1 reuse-s1"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
for arm in $ARMS; do
    dir=$WORK/$arm
    if [ ! -f "$HERE/runs/$arm/tune.json" ]; then
        for s in squeezenet1_1 mobilenetv2_100 resnet152 swin_tiny_patch4_window7_224 vgg16; do
            restore_tvm_db "$s" "$dir" "$SIX"
        done
    fi
    arm_reuse=1
    case $arm in noreuse-*) arm_reuse=0 ;; esac
    # the plain command's defaults (EfficientNet-B0 has no recipe), reuse as the arm says
    RECIPE=auto REUSE=$arm_reuse tune_from_nothing "$M" "$dir" "$HERE/runs/$arm" \
        "$WORK/tune-$arm.log" --seed "${arm##*-s}" || exit 1
done
restore_tvm_db "$M" "$WORK/six-recipes" "$SIX"
restore_tvm_db "$M" "$WORK/kept-1129" experiments/tvm-databases
dirs=("$WORK/kept-1129" "$WORK/six-recipes")
for arm in $ARMS; do dirs+=("$WORK/$arm"); done
networks_in_one_process "$M" "$HERE/runs/networks" "${dirs[@]}"
