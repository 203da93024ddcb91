#!/usr/bin/env bash
# run.sh's measurements again, later: the first pass (12:31-12:43 UTC) ran while the VM's
# speed jumped (ORT's p50 4.40-6.47 ms on SqueezeNet 1.1 across 4 runs). For each model, the
# two networks in one process again, then the new database against ORT, alternated in
# processes of their own, 4 runs each: runs/M/again/networks.* and vs-ort.*. The databases
# come from data/tvm-databases/ (llvm-znver4-*: 11-28; recipes-zen4/: run.sh's) where the
# git-ignored copies are missing.
#
#   bash experiments/tvm-recipes-zen4-2026-12-03/again.sh     # ~10 min on the 2-core Zen 4
#   bash experiments/tvm-recipes-zen4-2026-12-03/again.sh --dry-run
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
HERE=experiments/tvm-recipes-zen4-2026-12-03
WORK=results/experiments/tvm-recipes-zen4-2026-12-03    # git-ignored
MODELS=${MODELS:-"squeezenet1_1 resnet152"}

start_experiment "$HERE"
for m in $MODELS; do
    out=$HERE/runs/$m/again
    [ "$DRY" = 1 ] || mkdir -p "$out"
    restore_tvm_db "$m" "$WORK/kept-1128" data/tvm-databases 'llvm-znver4-*'
    restore_tvm_db "$m" "$WORK/tuning" data/tvm-databases/recipes-zen4
    networks_in_one_process "$m" "$out/networks" "$WORK/kept-1128" "$WORK/tuning"
    [ -f "$out/vs-ort.json" ] ||
        step "$PY" benchmarks/tvm_vs_ort.py compare --model "$m" --tuning-dir "$WORK/tuning" \
            --arms ort,tvm --reps 4 --json "$out/vs-ort.json" 2>&1 | tee "$(sink "$out/vs-ort.txt")"
done
