#!/usr/bin/env bash
# Issue 33 on the Zen 5: run.sh's ResNet-152 session again with --seed 1 (the tuner's seed;
# the random weights too, which do not change the workloads). Beside it, in one process, the
# kept Zen 5 database, the multi-vector session of seed 1 without transfer
# (../tvm-multi-vector-2026-11-29/seed1.sh) and run.sh's (seed 0, with transfer); then this
# one against ORT. Is run.sh's gain one lucky session? About 20 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-transfer-multi-2026-11-29/seed1.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-transfer-multi-2026-11-29
WORK=results/experiments/tvm-transfer-multi-2026-11-29  # git-ignored: the databases
MV=results/experiments/tvm-multi-vector-2026-11-29  # ../tvm-multi-vector-2026-11-29
M=resnet152
RUNS=$HERE/runs/$M-seed1

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-transfer-multi-2026-11-29/sources.sh
. "$HERE/sources.sh"                                # transfer_sources

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M-seed1"
transfer_sources "$M"
[ -d "$MV/multi-seed1" ] || {
    echo "run ../tvm-multi-vector-2026-11-29/seed1.sh first" >&2; exit 1; }
if [ ! -f "$RUNS/tune.json" ]; then
    # shellcheck disable=SC2046  # the flags are a word list
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning-seed1" \
        --no-reuse $(tvm_best_flags "$M") --design-space multi-vector --seed 1 \
        --no-transfer --transfer-from "${from[@]}" --no-progress --summary "$RUNS/tune.json" \
        > "$WORK/tune-$M-seed1.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$M-seed1.log" > "$RUNS/tune.log"
fi
networks_in_one_process "$M" "$RUNS/networks" "$(tvm_best_db "$M")" "$MV/multi-seed1" \
    "$WORK/tuning" "$WORK/tuning-seed1"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning-seed1" "$WORK/ort-$M-seed1" \
    "$RUNS"
