#!/usr/bin/env bash
# Issue 33 on the Zen 5: is what is left of the gap to ORT ours or TVM's own?
# ResNet-152 (1.028x ORT's p50) and SqueezeNet 1.1 (1.032x) are the two models above 1.0x at
# 512 trials, with their best databases: multi-vector, cost-model transfer, SqueezeNet 1.1
# also --out-channels pad-pair --allocation measured (../tvm-transfer-multi-2026-11-29/).
# For each, on a copy of that database:
# 1. ceiling.py (../tvm-kernel-ceiling-2026-11-26/): its heaviest tasks (by calls x time) get
#    EXTRA more candidates each in the same design space, tuned alone; the top 8 records are
#    re-measured side by side; each task's kernel from the database and from the copy, alone,
#    beside ORT's nodes of the same shape, in one process;
# 2. kernels_vs_ort.py (../tvm-resnet152-zen4-2026-11-28/) on the copy: every kernel warm,
#    cold and in the network beside ORT's node, and both networks' walls, in one process.
# About 25 minutes for ResNet-152 and 25 for SqueezeNet 1.1 on the 2-core Zen 5. The source
# databases are restored from ../tvm-databases/multi-vector-transfer/ where missing.
#
#   bash experiments/tvm-kernel-ceiling-zen5-2026-11-29/run.sh
#   MODELS=squeezenet1_1 bash experiments/tvm-kernel-ceiling-zen5-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-kernel-ceiling-zen5-2026-11-29
WORK=results/experiments/tvm-kernel-ceiling-zen5-2026-11-29   # git-ignored: the copies
SRC=results/experiments/tvm-transfer-multi-2026-11-29
ARCHIVE=experiments/tvm-databases/multi-vector-transfer
MODELS=${MODELS:-"resnet152 squeezenet1_1"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

# Each model's best database (../tvm-transfer-multi-2026-11-29/: run.sh's ResNet-152, seed 0;
# measured.sh's SqueezeNet 1.1), and how many tasks get how many more candidates: ResNet-152's
# three heaviest hold 67 % of its measured time (the session's measured shares); SqueezeNet
# 1.1's six heaviest are its four Fire 3x3 convs, the first conv and a Fire expand 1x1 conv.
# (ceiling.py passes over its classifier: the padded conv's output, sliced back to 1000
# channels, matches no ORT node by shape. It runs level with ORT's: 349.7 against 351.0 us,
# ../tvm-transfer-multi-2026-11-29/runs/squeezenet1_1/profile.txt.)
source_of() { if [ "$1" = squeezenet1_1 ]; then echo "$SRC/tuning-measured"; else echo "$SRC/tuning"; fi; }
top_of() { if [ "$1" = squeezenet1_1 ]; then echo 6; else echo 3; fi; }
extra_of() { if [ "$1" = squeezenet1_1 ]; then echo 128; else echo 160; fi; }

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    src=$(source_of "$m")
    restore_tvm_db "$m" "$src" "$ARCHIVE"
    runs=$HERE/runs/$m
    mkdir -p "$runs"
    if [ ! -f "$runs/ceiling.json" ]; then
        step "$PY" experiments/tvm-kernel-ceiling-2026-11-26/ceiling.py --model "$m" \
            --from "$src" --to "$WORK/$m" --top "$(top_of "$m")" --extra "$(extra_of "$m")" \
            --design-space multi-vector --json "$runs/ceiling.json" \
            2> "$WORK/ceiling-$m.log" | grep -v -e 'XGB' -e 'INFO\]' | tee "$runs/ceiling.txt"
        # the copy's sessions: the extra trials' count and seconds per task
        t=$(find "$WORK/$m" -mindepth 2 -maxdepth 2 -type d -name "$m-*" | head -1)
        [ -n "$t" ] && cp "$t/tuning.json" "$runs/tuning.json"
    fi
    if [ ! -f "$runs/kernels.json" ]; then
        step "$PY" experiments/tvm-resnet152-zen4-2026-11-28/kernels_vs_ort.py --model "$m" \
            --tuning-dir "$WORK/$m" --json "$runs/kernels.json" \
            2> "$WORK/kernels-$m.log" | tee "$runs/kernels.txt"
    fi
done
