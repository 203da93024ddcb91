#!/usr/bin/env bash
# Issue 33: how close each runtime runs ResNet-152 to this CPU's floating-point ceiling.
# kernels_vs_ort.py --ceilings (../tvm-resnet152-zen4-2026-11-28/) on each ResNet-152 database
# of 2026-11-28: every kernel warm, cold and in the network beside ORT's node, both walls, and
# in every round the machine's FMA ceiling (fma_peak.c) and MLAS's SGEMM (ceilings.py); every
# kernel's flops from TVM's estimate_tir_flops. Then streamed.py on the measured + cold one.
# The databases (git-ignored) come from
# ../tvm-resnet152-zen4-2026-11-28/run.sh and rerank.sh and
# ../tvm-resnet152-small-tasks-2026-11-28/run.sh, budget.sh and seeds.sh; one that is missing
# is left out. A rerun keeps the records it has. About 2 minutes a database on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-roofline-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-roofline-2026-11-28
WORK=results/experiments/tvm-resnet152-roofline-2026-11-28   # git-ignored: logs, the FMA loop
ZEN4=results/experiments/tvm-resnet152-zen4-2026-11-28
SMALL=results/experiments/tvm-resnet152-small-tasks-2026-11-28
M=resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
# label and tuning dir: 512 trials unless the label says otherwise
for pair in "kept-rerank-cold:$ZEN4/kept-rerank-cold" "share-cold:$ZEN4/cold" \
        "measured-cold:$SMALL/measured-cold" "share-cold-seed1:$SMALL/share-cold-seed1" \
        "measured-cold-seed1:$SMALL/measured-cold-seed1" \
        "measured-cold-1024:$SMALL/measured-cold-1024"; do
    label=${pair%%:*} db=${pair#*:}
    [ -d "$db" ] || { echo "[$label] no database in $db: left out"; continue; }
    kernels_beside_ort "$M" "$db" "$WORK" "$HERE/runs" "$label" --ceilings "$WORK/bin"
done
"$PY" "$HERE/table.py" "$HERE"/runs/kernels-*.json | tee "$HERE/runs/table.txt"
# what the network adds to a flush: the four heaviest kernels of the measured + cold database
# warm, flushed, streamed through copies of their weights, chained, and in the network
[ -f "$HERE/runs/streamed-measured-cold.json" ] ||
    step "$PY" "$HERE/streamed.py" --model "$M" --tuning-dir "$SMALL/measured-cold" \
        --json "$HERE/runs/streamed-measured-cold.json" 2> "$WORK/streamed-measured-cold.log" \
        | tee "$HERE/runs/streamed-measured-cold.txt"
