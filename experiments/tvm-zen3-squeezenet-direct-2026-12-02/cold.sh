#!/usr/bin/env bash
# Issue 33 on the AVX2 Zen 3: run.sh's SqueezeNet 1.1 session again with a cold runner
# (--runner-caches cold: the candidate's caches flushed before each measured call), to see
# whether the 1.1-1.8x that its kernels lose in the network against their warm database
# time (run.sh's profile) is the runner's warm caches. The same flags and cost-model
# source as run.sh, 512 trials from nothing; then the kept, run.sh's and this database's
# networks in one process, and against ORT: parity, 4 alternated runs, the profile.
# The database is kept in ../tvm-databases/zen3-direct-cold/.
#
#   bash experiments/tvm-zen3-squeezenet-direct-2026-12-02/cold.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-zen3-squeezenet-direct-2026-12-02
WORK=results/experiments/tvm-zen3-squeezenet-direct-2026-12-02   # git-ignored: the databases
RECIPES=results/experiments/tvm-recipes-zen3-2026-12-01/tuning   # 12-01's databases
M=squeezenet1_1
RUNS=$HERE/runs/$M-cold

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M-cold"
restore_tvm_db mobilenetv2_100 "$RECIPES" experiments/tvm-databases/recipes-zen3
restore_tvm_db "$M" "$WORK/tuning" experiments/tvm-databases/zen3-direct
restore_tvm_db "$M" "$WORK/tuning-cold" experiments/tvm-databases/zen3-direct-cold
from=("$RECIPES"/llvm-znver3-*/mobilenetv2_100-3x224x224)
[ -d "${from[0]}" ] || { echo "no Zen 3 MobileNetV2 database under $RECIPES" >&2; exit 1; }
tune_from_nothing "$M" "$WORK/tuning-cold" "$RUNS" "$WORK/tune-$M-cold.log" \
    --design-space multi-vector --out-channels pad-pair --allocation measured \
    --runner-caches cold --no-transfer --transfer-from "${from[@]}" || exit 1
networks_in_one_process "$M" "$RUNS/networks" "$(tvm_best_db "$M")" "$WORK/tuning" \
    "$WORK/tuning-cold"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning-cold" "$WORK/ort-$M-cold" "$RUNS"
