#!/usr/bin/env bash
# Issue 33: the build's per-kernel weight-prefetch choice (edgebench.tune --prefetch,
# converters/tvm/prefetch/choice.py) on ResNet-152's 512-trial measured + cold database
# (../tvm-resnet152-small-tasks-2026-11-28/'s: tvm_best_db resnet152).
# 1. CHOICES independent choices, each beside its own copy of the database (the source stays
#    as it was measured): runs/choice-N.txt (the command's per-kernel lines) and
#    runs/choice-N.json (the kept prefetch.json); 2. for each choice, PROCS processes of
#    walls.py: the network built without a prefetch, with the choice as kept, and with its
#    kernels picked again under the two warm rules (warm at most 1 % slower; warm not
#    looked at), beside ORT, alternated; the rule the choice was made under appears twice,
#    a control for what building it again does. 3. The suite's own run on choice 1's
#    database (edgebench.full: TVM and ORT, parity and latency, each cell in its process):
#    runs/full-choice-1.jsonl, whose TVM record names the prefetch it applied.
# About 2 minutes a choice and 7 a walls process on the 2-core Zen 4.
#
#   bash experiments/tvm-prefetch-choice-2026-11-28/run.sh [CHOICES] [PROCS]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-prefetch-choice-2026-11-28
WORK=results/experiments/tvm-prefetch-choice-2026-11-28    # git-ignored: the database copies
CHOICES=${1:-2}
PROCS=${2:-2}
M=resnet152
SLUG=llvm-znver4-95faa33f       # the database's target (the Zen 4 host)

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# restored from experiments/tvm-databases/ on a fresh checkout
SRC=${SRC:-$(tvm_best_db "$M")}

start_experiment "$HERE"
[ -d "$SRC/$SLUG/$M-3x224x224" ] || { echo "no database in $SRC/$SLUG/$M-3x224x224"; exit 1; }
quiet() { grep -v -e 'Fast mode segfaults' -e '^\[choice\] round' -e '^\[choice\] built'; }
for c in $(seq "$CHOICES"); do
    DB=$WORK/tuning-$c
    if [ ! -f "$HERE/runs/choice-$c.json" ]; then
        rm -rf "$DB" && mkdir -p "$DB/$SLUG/$M-3x224x224"
        cp "$SRC/$SLUG/$M-3x224x224"/*.json "$DB/$SLUG/$M-3x224x224/"
        step "$PY" -m edgebench.tune --model "$M" --tuning-dir "$DB" --trials 0 --prefetch \
            --no-progress --summary "$WORK/choice-$c-summary.json" \
            2> "$HERE/runs/choice-$c.txt" > "$WORK/choice-$c.out"
        cp "$DB/$SLUG/$M-3x224x224/prefetch.json" "$HERE/runs/choice-$c.json"
    fi
    for i in $(seq "$PROCS"); do
        [ -f "$HERE/runs/walls-choice-$c-$i.json" ] ||
            step "$PY" "$HERE/walls.py" --model "$M" --tuning-dir "$DB" --warm-slack 0.01 none \
                --json "$HERE/runs/walls-choice-$c-$i.json" 2>&1 \
                | quiet > "$HERE/runs/walls-choice-$c-$i.txt"
    done
done
if [ ! -f "$HERE/runs/full-choice-1.jsonl" ]; then
    rm -rf "$WORK/full-choice-1"
    step "$PY" -m edgebench.full --models "$M" --variants tvm onnxruntime \
        --tasks parity latency --tuning-dir "$WORK/tuning-1" --out "$WORK/full-choice-1" \
        > "$WORK/full-choice-1.log" 2>&1
    cp "$WORK/full-choice-1/results.jsonl" "$HERE/runs/full-choice-1.jsonl"
fi
