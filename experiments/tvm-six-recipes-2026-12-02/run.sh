#!/usr/bin/env bash
# Issue 33, item 1 as a user gets it: the six study models, each tuned from nothing by the plain
# command, with no flag but the budget and the tuning dir:
#
#   python -m edgebench.tune --model M --trials 512 --tuning-dir WORK/tuning
#
# so each takes today's defaults: its model recipe (converters/tvm/recipes.py: vgg16,
# resnet152, mobilenetv2_100, squeezenet1_1), reuse of shared kernels, and cost-model transfer
# from the siblings where the space is multi-vector. All six go into one tuning dir, in the
# order of ../tvm-six-models-zen5-2026-11-29/ (the multi-vector models before ResNet-152, as
# there, so it draws on them). Then, all six in one sitting: TVM and ORT parity in one suite
# run, and ORT and TVM alternated in processes of their own (pool_vs_ort.py, REPS runs each).
# About an hour of tuning on the 2-core Zen 5, half an hour of measuring.
#
#   bash experiments/tvm-six-recipes-2026-12-02/run.sh
#   MODELS=vgg16 bash experiments/tvm-six-recipes-2026-12-02/run.sh
#
# A rerun keeps what is recorded: a model with runs/M/tune.json is not tuned again (and not
# measured where that was another CPU), one with runs/M/vs-ort.json is not measured again.
# The databases are kept in ../tvm-databases/six-recipes/ and restored from there on a
# fresh checkout.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-recipes-2026-12-02
WORK=results/experiments/tvm-six-recipes-2026-12-02    # git-ignored
MODELS=${MODELS:-"squeezenet1_1 mobilenetv2_100 efficientnet_b0 resnet152 swin_tiny_patch4_window7_224 vgg16"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
measured=""
for m in $MODELS; do
    runs=$HERE/runs/$m
    mkdir -p "$runs"
    restore_tvm_db "$m" "$WORK/tuning" experiments/tvm-databases/six-recipes
    if [ -f "$runs/tune.json" ]; then
        tuned_for_this_cpu "$runs/tune.json" || continue
    else
        step "$PY" -m edgebench.tune --model "$m" --trials 512 --tuning-dir "$WORK/tuning" \
            --no-progress --summary "$runs/tune.json" > "$WORK/tune-$m.log" 2>&1 || continue
        grep -v 'Fast mode segfaults' "$WORK/tune-$m.log" > "$runs/tune.log"
    fi
    measured="$measured $m"
done
for m in $measured; do
    runs=$HERE/runs/$m
    [ -f "$runs/vs-ort.json" ] && continue
    parity_and_vs_ort "$m" "$WORK/tuning" "$WORK/ort-$m" "$runs" "${REPS:-4}"
done
"$PY" experiments/tvm-six-models-2026-11-27/table.py "$HERE/runs"
