#!/usr/bin/env bash
# Back on the AVX2 Zen 3 (family 25 model 1; LLVM's znver3; 8-float vectors): do the recipes
# found on the Zen 5 (2026-11-29) carry to a CPU without AVX-512? The kept Zen 3 databases
# (data/tvm-databases/llvm-znver3-*/) are from 11-25 to 11-27, before the multi-vector space,
# cost-model transfer in it, pad-pair, the pool sketch, winograd-fit and the
# input/concat/out-channel defaults; they read 1.0-1.85x ORT's p50 on 11-27.
# The three models whose Zen 5 best needed new flags, tuned from nothing in one tuning dir
# (so each session pre-trains its cost model on the ones before: the multi-vector default),
# in this order, 512 trials each, with their Zen 5 best databases' flags:
#   mobilenetv2_100  --design-space multi-vector
#   squeezenet1_1    --design-space multi-vector --conv2d winograd --out-channels pad-pair
#                    --allocation measured
#   resnet152        --design-space multi-vector --conv2d winograd-fit --allocation measured
#                    --runner-caches cold
# The databases are kept in data/tvm-databases/recipes-zen3/ (restored first: a rerun on a
# Zen 3 then only measures what is missing). For each: its network beside the kept Zen 3
# database's, interleaved in one process, then against ORT (parity, 4 alternated runs, a
# per-kernel profile: lib.sh tvm_against_ort).
#
#   bash experiments/tvm-recipes-zen3-2026-12-01/run.sh     # ~2 h on the 2-core Zen 3
#   bash experiments/tvm-recipes-zen3-2026-12-01/run.sh --dry-run   # the commands, run nothing
#   MODELS=squeezenet1_1 bash experiments/tvm-recipes-zen3-2026-12-01/run.sh
#
# A rerun keeps what is recorded (runs/M/tune.json, networks.json, vs-ort.json, profile.json);
# records tuned for another CPU are neither tuned over nor measured (tuned_for_this_cpu).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
HERE=experiments/tvm-recipes-zen3-2026-12-01
WORK=results/experiments/tvm-recipes-zen3-2026-12-01   # git-ignored: the databases
MODELS=${MODELS:-"mobilenetv2_100 squeezenet1_1 resnet152"}

# recipe MODEL: the flags of MODEL's best Zen 5 database, less the --transfer-from of other
# Zen 5 databases: here the tuning dir's earlier databases stand in for them
recipe() {
    case $1 in
        mobilenetv2_100) echo "--design-space multi-vector" ;;
        squeezenet1_1) echo "--design-space multi-vector --conv2d winograd --out-channels pad-pair --allocation measured" ;;
        resnet152) echo "--design-space multi-vector --conv2d winograd-fit --allocation measured --runner-caches cold" ;;
    esac
}

start_experiment "$HERE"
[ "$DRY" = 1 ] || mkdir -p "$WORK"
for m in $MODELS; do
    restore_tvm_db "$m" "$WORK/tuning" data/tvm-databases/recipes-zen3
done
for m in $MODELS; do
    # shellcheck disable=SC2046  # a word list
    tune_then_measure "$m" "$WORK" "$HERE/runs/$m" "$(tvm_best_db "$m" 'llvm-znver3-*')" \
        $(recipe "$m")
done
