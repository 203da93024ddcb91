#!/usr/bin/env bash
# Issue 33 on Zen 4, the other three models: SqueezeNet 1.1 and ResNet-152 were tuned by the
# plain command here this noon (../tvm-recipes-zen4-2026-12-03/), EfficientNet-B0 this
# morning (../tvm-reuse-space-zen4-2026-12-03/). MobileNetV2, Swin-T and VGG16's Zen 4 ratios
# to ORT (0.972x, 0.991x, 0.646x) are from 11-28 databases tuned with that day's flags. What
# does a user get on the Zen 4 who tunes them by the plain command, with no flag but the budget?
#
#   python -m edgebench.tune --model M --trials 512 --tuning-dir WORK/tuning
#
# 1. MobileNetV2, Swin-T, VGG16 tuned from nothing into one tuning dir, in the order of
#    ../tvm-six-recipes-2026-12-02/ (recipe, reuse and transfer as they default).
# 2. Each new network beside the kept Zen 4 database's (llvm-znver4-95faa33f, 11-28), in one
#    process (benchmarks/tvm_databases.py): runs/M/networks.*.
# 3. Each against ONNX Runtime: parity in one suite run, then ORT and TVM alternated in
#    processes of their own, 4 runs each (lib.sh parity_and_vs_ort): runs/M/vs-ort.*.
# 4. Steps 2 and 3's timings once more, model by model, after all three: runs/M/again/.
#
#   bash experiments/tvm-recipes-zen4-rest-2026-12-03/run.sh      # ~75 min on the 2-core Zen 4
#   MODELS=vgg16 bash experiments/tvm-recipes-zen4-rest-2026-12-03/run.sh
#
# A rerun keeps what is recorded (runs/M/tune.json, networks.json, vs-ort.json); a summary
# tuned for another CPU is neither tuned over nor measured (tuned_for_this_cpu).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-recipes-zen4-rest-2026-12-03
WORK=results/experiments/tvm-recipes-zen4-rest-2026-12-03    # git-ignored
MODELS=${MODELS:-"mobilenetv2_100 swin_tiny_patch4_window7_224 vgg16"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
measured=""
for m in $MODELS; do
    # the plain command: recipe, reuse and transfer as they default
    RECIPE=auto REUSE=1 tune_from_nothing "$m" "$WORK/tuning" "$HERE/runs/$m" \
        "$WORK/tune-$m.log" || continue
    measured="$measured $m"
done
for m in $measured; do
    runs=$HERE/runs/$m
    restore_tvm_db "$m" "$WORK/kept-1128" experiments/tvm-databases
    networks_in_one_process "$m" "$runs/networks" "$WORK/kept-1128" "$WORK/tuning"
    [ -f "$runs/vs-ort.json" ] || parity_and_vs_ort "$m" "$WORK/tuning" "$WORK/ort-$m" "$runs"
done
for m in $measured; do
    out=$HERE/runs/$m/again
    mkdir -p "$out"
    networks_in_one_process "$m" "$out/networks" "$WORK/kept-1128" "$WORK/tuning"
    [ -f "$out/vs-ort.json" ] ||
        step "$PY" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare \
            --model "$m" --tuning-dir "$WORK/tuning" --reps 4 \
            --json "$out/vs-ort.json" 2>&1 | tee "$out/vs-ort.txt"
done
"$PY" experiments/tvm-six-models-2026-11-27/table.py "$HERE/runs"
