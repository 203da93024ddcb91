#!/usr/bin/env bash
# Issue 33 on the Zen 5: the build's weight-prefetch choice (edgebench.tune --trials 0
# --prefetch, ../tvm-prefetch-choice-2026-11-28/) on the ResNet-152 database run.sh tuned here,
# whose kernels profile.sh found 8.7 % slower in the network than warm. The choice is made
# beside a copy of the database (the kept one stays without): runs/resnet152/prefetch-choice.*;
# then PROCS processes of ../tvm-prefetch-choice-2026-11-28/walls.py: the network without a
# prefetch, with the choice, and ORT, alternated in one process (runs/resnet152/prefetch-walls-N.*).
#
#   bash experiments/tvm-six-models-zen5-2026-11-29/prefetch.sh [PROCS]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-models-zen5-2026-11-29
WORK=results/experiments/tvm-six-models-zen5-2026-11-29
PROCS=${1:-1}
M=resnet152
RUNS=$HERE/runs/$M

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
DB=$WORK/prefetch-tuning
if [ ! -f "$RUNS/prefetch-choice.json" ]; then
    # run.sh tunes the Zen 5 database
    copy=$(copy_best_db "$M" 'llvm-znver5-*' "$DB") || exit 1
    step "$PY" -m edgebench.tune --model "$M" --tuning-dir "$DB" --trials 0 --prefetch \
        --no-progress --summary "$WORK/prefetch-choice-summary.json" \
        2>&1 > "$WORK/prefetch-choice.out" \
        | grep -v -e 'Fast mode segfaults' -e '^\[choice\] round' -e '^\[choice\] built' \
        > "$RUNS/prefetch-choice.txt"
    cp "$copy/prefetch.json" "$RUNS/prefetch-choice.json"
fi
for i in $(seq "$PROCS"); do
    [ -f "$RUNS/prefetch-walls-$i.json" ] ||
        step "$PY" experiments/tvm-prefetch-choice-2026-11-28/walls.py --model "$M" \
            --tuning-dir "$DB" --json "$RUNS/prefetch-walls-$i.json" 2>&1 \
            | grep -v -e 'Fast mode segfaults' -e '^\[choice\]' > "$RUNS/prefetch-walls-$i.txt"
done
