#!/usr/bin/env bash
# Issue 33 on the Zen 5: MLAS's convs and TVM's, each alone, with the caches emptied the same
# way before each call, beside both networks, in one process (one_flush.py). Does MLAS read
# cold weights at a lower cost than TVM, or do the two lose alike when emptied alike?
# - ResNet-152, the 1024-trial Zen 5 database (../tvm-six-models-zen5-2026-11-29/budget.sh),
#   the one ../tvm-zen5-gaps-2026-11-29/operands.py measured;
# - SqueezeNet 1.1, its kept database (its weights fit the L3).
# About 12 minutes on the 2-core Zen 5.
#
#   bash experiments/tvm-one-flush-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-one-flush-2026-11-29
WORK=results/experiments/tvm-one-flush-2026-11-29     # git-ignored: flush_lines.c's build
B1024=results/experiments/tvm-six-models-zen5-2026-11-29/budget-1024

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK/bin"
[ -f "$(find "$B1024" -name database_tuning_record.json 2>/dev/null | head -1)" ] \
    || { echo "no 1024-trial database in $B1024: run ../tvm-six-models-zen5-2026-11-29/budget.sh"; exit 1; }
for pair in "resnet152:$B1024" "squeezenet1_1:$(tvm_best_db squeezenet1_1)"; do
    m=${pair%%:*} db=${pair#*:}
    out=$HERE/runs/$m/one-flush
    [ -f "$out.json" ] && continue
    mkdir -p "$HERE/runs/$m"
    step "$PY" "$HERE/one_flush.py" --model "$m" --tuning-dir "$db" --lib-dir "$WORK/bin" \
        --json "$out.json" 2>&1 | grep -v 'Fast mode segfaults' | tee "$out.txt"
done
