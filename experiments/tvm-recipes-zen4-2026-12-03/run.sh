#!/usr/bin/env bash
# On the Zen 4, the two models still above ORT's p50 (SqueezeNet 1.1 1.019x, ResNet-152
# 1.063x, both 11-28, tuned with that day's flags) had not been tuned with their model recipes
# here (converters/tvm/cpu/recipes.py; derived on Zen 5). What does a user get on the Zen 4
# who tunes them by the plain command, with no flag but the budget?
#
#   python -m edgebench.tune --model M --trials 512 --tuning-dir WORK/tuning
#
# 1. SqueezeNet 1.1, then ResNet-152, tuned from nothing into one tuning dir (recipe, reuse
#    and transfer as they default).
# 2. Each new network beside the kept Zen 4 database's (data/tvm-databases/llvm-znver4-*,
#    11-28), in one process (benchmarks/tvm_databases.py): runs/M/networks.*.
# 3. Each against ONNX Runtime: parity in one suite run, then ORT and TVM alternated in
#    processes of their own, 4 runs each (lib.sh parity_and_vs_ort): runs/M/vs-ort.*.
# 4. The table (benchmarks/tvm_vs_ort.py table runs).
#
#   bash experiments/tvm-recipes-zen4-2026-12-03/run.sh      # ~1 h on the 2-core Zen 4
#   bash experiments/tvm-recipes-zen4-2026-12-03/run.sh --dry-run   # the commands, run nothing
#   MODELS=squeezenet1_1 bash experiments/tvm-recipes-zen4-2026-12-03/run.sh
#
# A rerun keeps what is recorded (runs/M/tune.json, networks.json, vs-ort.json); a summary
# tuned for another CPU is neither tuned over nor measured (tuned_for_this_cpu).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
HERE=experiments/tvm-recipes-zen4-2026-12-03
WORK=results/experiments/tvm-recipes-zen4-2026-12-03    # git-ignored
MODELS=${MODELS:-"squeezenet1_1 resnet152"}

start_experiment "$HERE"
[ "$DRY" = 1 ] || mkdir -p "$WORK"
measured=""
for m in $MODELS; do
    # the plain command: recipe, reuse and transfer as they default
    RECIPE=auto REUSE=1 tune_from_nothing "$m" "$WORK/tuning" "$HERE/runs/$m" \
        "$WORK/tune-$m.log" || continue
    measured="$measured $m"
done
for m in $measured; do
    runs=$HERE/runs/$m
    restore_tvm_db "$m" "$WORK/kept-1128" data/tvm-databases 'llvm-znver4-*'
    networks_in_one_process "$m" "$runs/networks" "$WORK/kept-1128" "$WORK/tuning"
    [ -f "$runs/vs-ort.json" ] || parity_and_vs_ort "$m" "$WORK/tuning" "$WORK/ort-$m" "$runs"
done
run_cmd "$PY" benchmarks/tvm_vs_ort.py table "$HERE/runs"
