#!/usr/bin/env bash
# Issue 33, after tune.sh: the 14x14 3x3 conv's best record in the streamed database, with its
# channel blocks moved out of the parallel loop's innermost place (loop_order.py: channel split
# [16,1,1] and [4,4,1] in place of [1,16,1]), each in a copy of the database. Then the three
# networks interleaved in one process (benchmarks/tvm_databases.py) and kernels_vs_ort.py
# --ceilings on the channel-outer copy. Then the same with every task's best record moved
# that way (loop_order.py --all: channel split [a, b, c] -> [a*b, 1, c]) beside the tuned
# database and the one-record copy. The copies are for measurement only. About 20 minutes.
#
#   bash experiments/tvm-resnet152-roofline-2026-11-28/loop_order.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-roofline-2026-11-28
WORK=results/experiments/tvm-resnet152-roofline-2026-11-28   # git-ignored: the databases
M=resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
[ -d "$WORK/measured-streamed" ] || { echo "no database in $WORK/measured-streamed: run tune.sh"; exit 1; }
for pair in "ff-outer:16,1,1" "ff-4x4:4,4,1"; do
    step "$PY" "$HERE/loop_order.py" --tuning-dir "$WORK/measured-streamed" \
        --out "$WORK/measured-streamed-${pair%%:*}" --split "${pair#*:}" 2>&1 \
        | grep -v 'Fast mode segfaults'
done
networks_in_one_process "$M" "$HERE/runs/networks-loop-order" "$WORK/measured-streamed" \
    "$WORK/measured-streamed-ff-outer" "$WORK/measured-streamed-ff-4x4"
kernels_beside_ort "$M" "$WORK/measured-streamed-ff-outer" "$WORK" "$HERE/runs" measured-streamed-ff-outer --ceilings "$WORK/bin"
step "$PY" "$HERE/loop_order.py" --tuning-dir "$WORK/measured-streamed" \
    --out "$WORK/measured-streamed-ff-outer-all" --all 2>&1 | grep -v 'Fast mode segfaults' \
    | tee "$HERE/runs/loop-order-all.txt"
networks_in_one_process "$M" "$HERE/runs/networks-loop-order-all" "$WORK/measured-streamed" \
    "$WORK/measured-streamed-ff-outer" "$WORK/measured-streamed-ff-outer-all"
kernels_beside_ort "$M" "$WORK/measured-streamed-ff-outer-all" "$WORK" "$HERE/runs" measured-streamed-ff-outer-all --ceilings "$WORK/bin"
