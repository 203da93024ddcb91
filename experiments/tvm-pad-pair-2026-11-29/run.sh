#!/usr/bin/env bash
# Issue 33 on the Zen 5: SqueezeNet 1.1's classifier padded to whole pairs of vectors.
# With --design-space multi-vector (../tvm-multi-vector-2026-11-29/) a conv gets the
# two-vector sketch only where a pair of vectors divides its output channels. SqueezeNet's
# 1000-class conv, a quarter of the network, is padded to 1008 (--out-channels pad): 32 does
# not divide that, so it kept one vector. --out-channels pad-pair pads it to 1024. From
# nothing:
# - tuned at 512 trials with --design-space multi-vector --out-channels pad-pair;
# - its network beside the kept Zen 5 database's and the multi-vector (1008) one,
#   interleaved in one process;
# - against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort).
# About 12 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-pad-pair-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-pad-pair-2026-11-29
WORK=results/experiments/tvm-pad-pair-2026-11-29    # git-ignored: the databases
MULTI=results/experiments/tvm-multi-vector-2026-11-29/multi  # ../tvm-multi-vector-2026-11-29
MODELS=${MODELS:-squeezenet1_1}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    runs=$HERE/runs/$m
    mkdir -p "$runs" "$WORK/ort-$m"
    if [ ! -f "$runs/tune.json" ]; then
        # shellcheck disable=SC2046  # the flags are a word list
        step "$PY" -m edgebench.tune --model "$m" --trials 512 --tuning-dir "$WORK/tuning" \
            --no-reuse $(tvm_best_flags "$m") --design-space multi-vector --no-transfer \
            --out-channels pad-pair --no-progress --summary "$runs/tune.json" \
            > "$WORK/tune-$m.log" 2>&1
        grep -v 'Fast mode segfaults' "$WORK/tune-$m.log" > "$runs/tune.log"
    fi
    networks_in_one_process "$m" "$runs/networks" "$(tvm_best_db "$m")" "$MULTI" \
        "$WORK/tuning"
    [ -f "$runs/vs-ort.json" ] || tvm_against_ort "$m" "$WORK/tuning" "$WORK/ort-$m" "$runs"
done
