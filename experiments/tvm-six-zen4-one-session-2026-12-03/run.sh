#!/usr/bin/env bash
# TVM against ONNX Runtime on the Zen 4, the six ratios in one session. Each of the six
# models was tuned on this CPU on 2026-12-03 by the plain command (python -m edgebench.tune
# --model M --trials 512, recipe, reuse and transfer as they default), in three experiments,
# each measuring its models against ONNX Runtime in its own hour. The VM's speed moves by tens
# of percent between hours, so here the six are measured again in one sequence, from their
# archives in data/tvm-databases/ (recipes-zen4/, and reuse-space-zen4/ for EfficientNet-B0):
#
# 1. Each model's database restored into one tuning dir; a model whose archive is not for
#    this CPU's target is left out (lib.sh db_for_this_cpu).
# 2. Pass 1, the study's order: parity of TVM and ORT in one suite run, then ORT and TVM
#    alternated in processes of their own, 4 runs each (lib.sh parity_and_vs_ort):
#    runs/first/M/.
# 3. Pass 2, the same in the reverse order: runs/second/M/.
# 4. Pass 3, the study's order again, 8 runs of each: runs/third/M/. pooled.py pools the
#    three passes' runs per model; benchmarks/tvm_vs_ort.py table makes each pass's table.
# 5. MobileNetV2, 8 runs each again, every process also timing references before it loads
#    and after its timed calls (benchmarks/tvm_vs_ort_phases.py): phases/.
#
#   bash experiments/tvm-six-zen4-one-session-2026-12-03/run.sh     # ~70 min on the 2-core Zen 4
#   bash experiments/tvm-six-zen4-one-session-2026-12-03/run.sh --dry-run   # the commands, run nothing
#   MODELS=vgg16 bash experiments/tvm-six-zen4-one-session-2026-12-03/run.sh
#
# A rerun keeps what is recorded (runs/PASS/M/vs-ort.json, phases/M.json).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
HERE=experiments/tvm-six-zen4-one-session-2026-12-03
WORK=results/experiments/tvm-six-zen4-one-session-2026-12-03    # git-ignored
DBS=data/tvm-databases
MODELS=${MODELS:-"resnet152 mobilenetv2_100 squeezenet1_1 efficientnet_b0 vgg16 swin_tiny_patch4_window7_224"}

# the set that keeps each model's plain-command database
kept_in() {
    case $1 in
        efficientnet_b0) echo "$DBS/reuse-space-zen4" ;;
        *) echo "$DBS/recipes-zen4" ;;
    esac
}

start_experiment "$HERE"
[ "$DRY" = 1 ] || mkdir -p "$WORK" "$HERE/phases"
ready=""
for m in $MODELS; do
    db_for_this_cpu "$(kept_in "$m")" "$m" || continue
    restore_tvm_db "$m" "$WORK/tuning" "$(kept_in "$m")"
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
    run_cmd "$PY" benchmarks/tvm_vs_ort.py table "$HERE/runs/$pass"
done
run_cmd "$PY" "$HERE/pooled.py"
m=mobilenetv2_100
case " $ready " in
    *" $m "*)
        [ -f "$HERE/phases/$m.json" ] ||
            step "$PY" benchmarks/tvm_vs_ort_phases.py compare --model "$m" \
                --tuning-dir "$WORK/tuning" --reps 8 --json "$HERE/phases/$m.json" 2>&1 \
                | tee "$(sink "$HERE/phases/$m.txt")"
        ;;
esac
