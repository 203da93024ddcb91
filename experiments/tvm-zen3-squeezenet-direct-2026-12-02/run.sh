#!/usr/bin/env bash
# Issue 33 on the AVX2 Zen 3 (family 25 model 1; LLVM's znver3): SqueezeNet 1.1 with the direct
# conv. On 2026-12-01 (../tvm-recipes-zen3-2026-12-01/) its Zen 5 best recipe, F(4x4) Winograd
# everywhere, ran 1.105x the kept Zen 3 database's p50 in one process, and its Winograd kernels
# ran 1.54-1.83x their database time in the network. This tunes the Zen 5's direct recipe
# (../tvm-pool-schedule-2026-11-29/: multi-vector, pad-pair, measured, the pool sketch) from
# nothing at 512 trials, its cost model pre-trained on the same source as 12-01's Winograd
# session (the recipes' MobileNetV2 database, 526 records), so the conv is the one difference.
# 1. the three databases' networks in one process: the kept Zen 3 one (tvm_best_db), 12-01's
#    Winograd one, this one;
# 2. against ORT: parity, 4 alternated runs, the per-kernel profile (tvm_against_ort).
# The database is kept in ../tvm-databases/zen3-direct/ and restored on a rerun.
#
#   bash experiments/tvm-zen3-squeezenet-direct-2026-12-02/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-zen3-squeezenet-direct-2026-12-02
WORK=results/experiments/tvm-zen3-squeezenet-direct-2026-12-02   # git-ignored: the database
RECIPES=results/experiments/tvm-recipes-zen3-2026-12-01/tuning   # 12-01's databases
M=squeezenet1_1
RUNS=$HERE/runs/$M

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M"
for m in mobilenetv2_100 "$M"; do
    restore_tvm_db "$m" "$RECIPES" experiments/tvm-databases/recipes-zen3
done
restore_tvm_db "$M" "$WORK/tuning" experiments/tvm-databases/zen3-direct
from=("$RECIPES"/llvm-znver3-*/mobilenetv2_100-3x224x224)
[ -d "${from[0]}" ] || { echo "no Zen 3 MobileNetV2 database under $RECIPES" >&2; exit 1; }
tune_from_nothing "$M" "$WORK/tuning" "$RUNS" "$WORK/tune-$M.log" --design-space multi-vector \
    --out-channels pad-pair --allocation measured --no-transfer --transfer-from "${from[@]}" \
    || exit 1
networks_in_one_process "$M" "$RUNS/networks" "$(tvm_best_db "$M")" "$RECIPES" "$WORK/tuning"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning" "$WORK/ort-$M" "$RUNS"
