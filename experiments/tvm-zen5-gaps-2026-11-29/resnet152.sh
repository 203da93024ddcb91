#!/usr/bin/env bash
# Issue 33 on the Zen 5, ResNet-152: its kernels run 8.7 % (512 trials) and 11.7 % (1024 trials)
# slower in the network than warm, against 4.8 % on the Zen 4, and at 1024 trials they are level
# with ORT's nodes warm. Is it the order in which a tuned conv reads its prepacked weights? On
# the Zen 4 moving the parallel loop's channel blocks outermost (each thread keeps a block's
# weights over the pixels, as MLAS's conv does) moved the network by 0-0.3 %
# (../tvm-resnet152-roofline-2026-11-28/loop_order.py). Here, where compute is twice as fast
# and the weights' fetch is not:
# - the kept 512-trial Zen 5 database (copied) and the 1024-trial one
#   (../tvm-six-models-zen5-2026-11-29/budget.sh), each with every task's best record edited
#   that way (loop_order.py --all: channel split [a, b, c] -> [a*b, 1, c]); the edited copies
#   keep the tuned records' times, so they are for measurement only;
# - the four networks interleaved in one process (benchmarks/tvm_databases.py, 15 rounds);
# - every kernel of the edited 1024-trial build beside ORT's node, warm, cold and in the
#   network, with the FMA ceiling (kernels_vs_ort.py --ceilings), against the unedited one's
#   ../tvm-six-models-zen5-2026-11-29/runs/resnet152/kernels-zen5-1024.*.
# - every conv shape as an ORT model of its own, warm and cold, beside ORT's nodes in the network
#   and the unedited 1024-trial build's kernels (ort_alone.py): does MLAS lose time in the
#   network too?
# - each kernel of the 1024-trial build alone with one operand flushed before each call
#   (operands.py): which one the network costs it.
# About 35 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-zen5-gaps-2026-11-29/resnet152.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-zen5-gaps-2026-11-29
WORK=results/experiments/tvm-zen5-gaps-2026-11-29     # git-ignored: the databases
M=resnet152
RUNS=$HERE/runs/$M
B1024=results/experiments/tvm-six-models-zen5-2026-11-29/budget-1024
LOOP_ORDER=experiments/tvm-resnet152-roofline-2026-11-28/loop_order.py

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK/bin" "$RUNS"
[ -f "$(find "$B1024" -name database_tuning_record.json 2>/dev/null | head -1)" ] \
    || { echo "no 1024-trial database in $B1024: run ../tvm-six-models-zen5-2026-11-29/budget.sh"; exit 1; }
copy_best_db "$M" 'llvm-znver5-*' "$WORK/r152-512" > /dev/null || exit 1
for pair in "r152-512:$WORK/r152-512" "r152-1024:$B1024"; do
    label=${pair%%:*} src=${pair#*:}
    [ -d "$WORK/$label-outer" ] && [ -f "$RUNS/loop-order-$label.txt" ] && continue
    step "$PY" "$LOOP_ORDER" --tuning-dir "$src" --out "$WORK/$label-outer" --all 2>&1 \
        | grep -v 'Fast mode segfaults' | tee "$RUNS/loop-order-$label.txt"
done
networks_in_one_process "$M" "$RUNS/networks" "$WORK/r152-512" "$WORK/r152-512-outer" \
    "$B1024" "$WORK/r152-1024-outer"
kernels_beside_ort "$M" "$WORK/r152-1024-outer" "$WORK" "$RUNS" 1024-outer --ceilings "$WORK/bin"
# Then ORT's side of the same question and which operand TVM's kernels pay for: the unedited
# 1024-trial build's kernels (kernels_vs_ort.py), every conv shape as an ORT model of its own,
# warm and cold, beside ORT's nodes in the network (ort_alone.py), and each kernel alone with
# only its weights, output, input or residual flushed before each call (operands.py). About
# 10 minutes.
kernels_mlas_operands "$M" "$B1024" "$WORK" "$RUNS" 1024 --ceilings "$WORK/bin"
