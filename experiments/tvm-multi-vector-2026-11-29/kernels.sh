#!/usr/bin/env bash
# Issue 33 on the Zen 5, the kernels behind multi-vector:
# - ResNet-152's 14x14 3x3 conv (35 calls, the largest share of its gap to ORT) tuned alone
#   from nothing at 96 trials with each design space, then both kernels and the 1024-trial
#   Zen 5 database's beside MLAS's conv of that shape, warm, in one process (task_alone.py);
# - every conv of run.sh's ResNet-152 database beside MLAS's, warm, emptied and in both
#   networks (../tvm-one-flush-2026-11-29/one_flush.py), after run.sh.
# About 8 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-multi-vector-2026-11-29/kernels.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-multi-vector-2026-11-29
WORK=results/experiments/tvm-multi-vector-2026-11-29  # git-ignored: the databases
B1024=results/experiments/tvm-six-models-zen5-2026-11-29/budget-1024
TASK=fused_conv2d16_add9_relu71
RUNS=$HERE/runs/resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS"
[ -f "$(find "$B1024" -name database_tuning_record.json 2>/dev/null | head -1)" ] \
    || { echo "no 1024-trial database in $B1024: run ../tvm-six-models-zen5-2026-11-29/budget.sh"; exit 1; }
for space in auto multi-vector; do
    [ -f "$RUNS/conv16-$space.json" ] && continue
    step "$PY" -m edgebench.tune --model resnet152 --only-tasks "$TASK" --trials 96 \
        --tuning-dir "$WORK/conv16-$space" --no-reuse --design-space "$space" --no-progress \
        --summary "$RUNS/conv16-$space.json" > "$WORK/conv16-$space.log" 2>&1
done
[ -f "$RUNS/conv16-alone.json" ] || step "$PY" "$HERE/task_alone.py" --model resnet152 \
    --task "$TASK" --tuning-dirs "1024:$B1024" "auto-96:$WORK/conv16-auto" \
    "multi-vector-96:$WORK/conv16-multi-vector" --json "$RUNS/conv16-alone.json" 2>&1 \
    | grep -v 'Fast mode segfaults' | tee "$RUNS/conv16-alone.txt"
[ -f "$(find "$WORK/multi" -path '*resnet152-*' -name database_tuning_record.json 2>/dev/null | head -1)" ] \
    || { echo "no multi-vector ResNet-152 database in $WORK/multi: run run.sh"; exit 1; }
[ -f "$RUNS/one-flush.json" ] || step "$PY" experiments/tvm-one-flush-2026-11-29/one_flush.py \
    --model resnet152 --tuning-dir "$WORK/multi" --lib-dir "$WORK/bin" \
    --json "$RUNS/one-flush.json" 2>&1 | grep -v 'Fast mode segfaults' | tee "$RUNS/one-flush.txt"
