#!/usr/bin/env bash
# Issue 33 on the Zen 5: cost-model transfer in the multi-vector space.
# At 512 trials ResNet-152's measured allocation gives 23 of its 28 tasks one batch of 9
# candidates (../tvm-multi-vector-2026-11-29/runs/resnet152/tune.json), about 16 of its 52 ms;
# those tasks' bests move 0.74-1.26x between two sessions that differ only in the search's
# population (../tvm-population-2026-11-29/). Their 9 candidates are picked by a cost model
# that has seen little. --transfer-from pre-trains it on the other study models' databases of
# the same target, layout and design space (from ../tvm-multi-vector-2026-11-29/run.sh; never
# the model's own). For each model, from nothing:
# - tuned at 512 trials with its multi-vector flags (SqueezeNet 1.1 with --out-channels
#   pad-pair, ../tvm-pad-pair-2026-11-29/) and --transfer-from the other three databases;
# - its network beside the kept Zen 5 database's and the multi-vector one(s) without transfer,
#   interleaved in one process;
# - against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort).
# About 20 minutes for ResNet-152, 12 for SqueezeNet 1.1, on the 2-core Zen 5. The sources
# are restored from experiments/tvm-databases/multi-vector/ where missing; SqueezeNet 1.1's
# comparison needs ../tvm-pad-pair-2026-11-29/run.sh's database (git-ignored).
#
#   bash experiments/tvm-transfer-multi-2026-11-29/run.sh
#   MODELS=squeezenet1_1 bash experiments/tvm-transfer-multi-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-transfer-multi-2026-11-29
WORK=results/experiments/tvm-transfer-multi-2026-11-29  # git-ignored: the databases
PAIR=results/experiments/tvm-pad-pair-2026-11-29/tuning      # ../tvm-pad-pair-2026-11-29
MODELS=${MODELS:-"resnet152 squeezenet1_1"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-transfer-multi-2026-11-29/sources.sh
. "$HERE/sources.sh"                                # MULTI, transfer_sources

# The flags of each model's multi-vector session beside tvm_best_flags', and the databases
# of those sessions without transfer to measure it against.
extra_flags() { [ "$1" = squeezenet1_1 ] && echo "--out-channels pad-pair"; }
untransferred() { if [ "$1" = squeezenet1_1 ]; then echo "$MULTI $PAIR"; else echo "$MULTI"; fi; }

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    transfer_sources "$m"
    runs=$HERE/runs/$m
    mkdir -p "$runs" "$WORK/ort-$m"
    if [ ! -f "$runs/tune.json" ]; then
        # shellcheck disable=SC2046  # the flags are word lists
        step "$PY" -m edgebench.tune --model "$m" --trials 512 --tuning-dir "$WORK/tuning" \
            --no-reuse $(tvm_best_flags "$m") $(extra_flags "$m") --design-space multi-vector \
            --no-transfer --transfer-from "${from[@]}" --no-progress \
            --summary "$runs/tune.json" \
            > "$WORK/tune-$m.log" 2>&1
        grep -v 'Fast mode segfaults' "$WORK/tune-$m.log" > "$runs/tune.log"
    fi
    # shellcheck disable=SC2046  # a word list
    networks_in_one_process "$m" "$runs/networks" "$(tvm_best_db "$m")" $(untransferred "$m") \
        "$WORK/tuning"
    [ -f "$runs/vs-ort.json" ] || tvm_against_ort "$m" "$WORK/tuning" "$WORK/ort-$m" "$runs"
done
