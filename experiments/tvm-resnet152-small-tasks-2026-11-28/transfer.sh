#!/usr/bin/env bash
# Issue 33, after run.sh: do ResNet-152's first rounds pick better with the cost model
# pre-trained on the other five study models' Zen 4 databases (--transfer-from, issue item 3)?
# ResNet-152 tuned from nothing as run.sh did (--trials 512 --no-reuse --allocation measured
# --runner-caches cold, seed 0), plus --transfer-from the five kept databases of
# ../tvm-input-conv-2026-11-28/ (same layout and design space); then it and run.sh's database
# interleaved in one process (benchmarks/tvm_databases.py), and kernels_then_ort (lib.sh) on
# it. A rerun keeps the database and repeats the measurements. About 25 minutes on the 2-core
# Zen 4.
#
#   bash experiments/tvm-resnet152-small-tasks-2026-11-28/transfer.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-small-tasks-2026-11-28
WORK=results/experiments/tvm-resnet152-small-tasks-2026-11-28   # git-ignored: the databases
KEPT=results/experiments/tvm-input-conv-2026-11-28
M=resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
[ -d "$WORK/measured-cold" ] || { echo "no database in $WORK/measured-cold: run run.sh first"; exit 1; }
sources=()
for m in vgg16 mobilenetv2_100 squeezenet1_1 efficientnet_b0 swin_tiny_patch4_window7_224; do
    [ -d "$KEPT/$m/tuning" ] || { echo "no database in $KEPT/$m/tuning: run ../tvm-input-conv-2026-11-28/run.sh"; exit 1; }
    sources+=("$KEPT/$m/tuning")
done
[ -f "$HERE/runs/tune-measured-cold-transfer.json" ] || {
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --no-reuse --allocation measured \
        --runner-caches cold --transfer-from "${sources[@]}" \
        --tuning-dir "$WORK/measured-cold-transfer" --no-progress \
        --summary "$HERE/runs/tune-measured-cold-transfer.json" \
        > "$WORK/tune-measured-cold-transfer.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-measured-cold-transfer.log" \
        > "$HERE/runs/tune-measured-cold-transfer.log"
}
networks_in_one_process "$M" "$HERE/runs/networks-transfer" "$WORK/measured-cold" \
    "$WORK/measured-cold-transfer"
kernels_then_ort "$M" "$WORK/measured-cold-transfer" "$WORK" "$HERE/runs" measured-cold-transfer
