#!/usr/bin/env bash
# Issue 33 on the Zen 5: run.sh's SqueezeNet 1.1 session (multi-vector, pad-pair, transfer)
# with --allocation measured: a first round of half batches (8 candidates a task, 248 of 512
# trials), then the gradient rule by measured time, as ResNet-152 is tuned. SqueezeNet's
# classifier holds a fifth of the network in one task of 31, and the uniform rule gives it
# 32 trials like any other. Beside run.sh's database (uniform) and the kept Zen 5 one, in one
# process; then against ORT. About 12 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-transfer-multi-2026-11-29/measured.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-transfer-multi-2026-11-29
WORK=results/experiments/tvm-transfer-multi-2026-11-29  # git-ignored: the databases
M=squeezenet1_1
RUNS=$HERE/runs/$M-measured

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-transfer-multi-2026-11-29/sources.sh
. "$HERE/sources.sh"                                # transfer_sources

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M-measured"
transfer_sources "$M"
[ -d "$WORK/tuning" ] || { echo "run run.sh (MODELS=$M) first" >&2; exit 1; }
if [ ! -f "$RUNS/tune.json" ]; then
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning-measured" \
        --no-reuse --design-space multi-vector \
        --no-transfer --out-channels pad-pair --allocation measured \
        --transfer-from "${from[@]}" --no-progress --summary "$RUNS/tune.json" \
        > "$WORK/tune-$M-measured.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$M-measured.log" > "$RUNS/tune.log"
fi
networks_in_one_process "$M" "$RUNS/networks" "$(tvm_best_db "$M")" "$WORK/tuning" \
    "$WORK/tuning-measured"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning-measured" \
    "$WORK/ort-$M-measured" "$RUNS"
