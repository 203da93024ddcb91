#!/usr/bin/env bash
# Issue 33 on Zen 4, the six ratios in one session. Each of the six models was tuned on this
# CPU on 2026-12-03 by the plain command (python -m edgebench.tune --model M --trials 512,
# recipe, reuse and transfer as they default), in three experiments, and measured against
# ONNX Runtime there, each in its own hour: EfficientNet-B0 in the morning
# (../tvm-reuse-space-zen4-2026-12-03/, HEAD seed 0), SqueezeNet 1.1 and ResNet-152 at noon
# (../tvm-recipes-zen4-2026-12-03/), MobileNetV2, Swin-T and VGG16 in the afternoon
# (../tvm-recipes-zen4-rest-2026-12-03/). The VM's speed moves by tens of percent between
# hours, so here the six are measured again in one sequence, from their kept archives:
#
# 1. Each model's database restored from experiments/tvm-databases/ into one tuning dir.
#    A model whose database was tuned for another CPU is left out (tuned_for_this_cpu).
# 2. Pass 1, the study's order: parity of TVM and ORT in one suite run, then ORT and TVM
#    alternated in processes of their own, 4 runs each (lib.sh parity_and_vs_ort):
#    runs/first/M/.
# 3. Pass 2, the same in the reverse order: runs/second/M/.
# 4. Pass 3, the study's order again, 8 runs of each (the first two passes' ratios moved by
#    up to 0.55 between passes: the VM's slow phases, about a minute long, fell on one arm's
#    runs or the other's): runs/third/M/. pooled.py pools the three passes' runs per model.
# 5. MobileNetV2, 8 runs each again, every process also timing references before it loads
#    and after its timed calls (phases.py): do the slow phases show in them? phases/.
#
#   bash experiments/tvm-six-zen4-one-session-2026-12-03/run.sh     # ~70 min on the 2-core Zen 4
#   MODELS=vgg16 bash experiments/tvm-six-zen4-one-session-2026-12-03/run.sh
#
# A rerun keeps what is recorded (runs/PASS/M/vs-ort.json, phases/M.json).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-zen4-one-session-2026-12-03
WORK=results/experiments/tvm-six-zen4-one-session-2026-12-03    # git-ignored
DBS=experiments/tvm-databases
MODELS=${MODELS:-"resnet152 mobilenetv2_100 squeezenet1_1 efficientnet_b0 vgg16 swin_tiny_patch4_window7_224"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

# where each model's plain-command database was tuned (its tune.json) and is kept
source_of() {
    case $1 in
        efficientnet_b0) echo "experiments/tvm-reuse-space-zen4-2026-12-03/runs/head-s0 $DBS/reuse-space-zen4" ;;
        squeezenet1_1 | resnet152) echo "experiments/tvm-recipes-zen4-2026-12-03/runs/$1 $DBS/recipes-zen4" ;;
        *) echo "experiments/tvm-recipes-zen4-rest-2026-12-03/runs/$1 $DBS/recipes-zen4" ;;
    esac
}

start_experiment "$HERE"
mkdir -p "$WORK"
ready=""
for m in $MODELS; do
    read -r tuned kept <<< "$(source_of "$m")"
    tuned_for_this_cpu "$tuned/tune.json" || continue
    restore_tvm_db "$m" "$WORK/tuning" "$kept"
    ready="$ready $m"
done
reversed=$(echo "$ready" | tr ' ' '\n' | tac | tr '\n' ' ')
for pass in first second third; do
    order=$ready reps=4
    [ "$pass" = second ] && order=$reversed
    [ "$pass" = third ] && reps=8
    for m in $order; do
        runs=$HERE/runs/$pass/$m
        [ -f "$runs/vs-ort.json" ] ||
            parity_and_vs_ort "$m" "$WORK/tuning" "$WORK/$pass-$m" "$runs" "$reps"
    done
done
for pass in first second third; do
    echo "## $pass pass"
    "$PY" experiments/tvm-six-models-2026-11-27/table.py "$HERE/runs/$pass"
done
"$PY" "$HERE/pooled.py"
m=mobilenetv2_100
case " $ready " in
    *" $m "*)
        [ -f "$HERE/phases/$m.json" ] ||
            step "$PY" "$HERE/phases.py" compare --model "$m" --tuning-dir "$WORK/tuning" \
                --reps 8 --json "$HERE/phases/$m.json" 2>&1 | tee "$HERE/phases/$m.txt"
        ;;
esac
