#!/usr/bin/env bash
# pytorch-compile's first batch-1 call, and the cores a compile keeps busy:
#   1. benchmarks/pytorch_compile_first_call.py: convert's batch-1 call outside inference mode
#      (old) against through the predictor (new), a fresh interpreter and inductor cache per
#      run, arms alternating, 2 runs each, three models (about 8 minutes): WORK/ab-output.txt;
#   2. benchmarks/pytorch_compile_cores.py for mobilenetv2_100 and resnet152, each on an empty
#      inductor cache (about 3 minutes): WORK/cores_used-output.txt.
# WORK: results/experiments/jit-first-call-recompile (this folder keeps the 2026-11-25 output).
#
#   bash experiments/jit-first-call-recompile/run.sh
#   bash experiments/jit-first-call-recompile/run.sh --dry-run     # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/jit-first-call-recompile}
[ "$DRY" = 1 ] || mkdir -p "$WORK"
run_cmd "$PY" benchmarks/pytorch_compile_first_call.py mobilenetv2_100 efficientnet_b0 resnet152 \
    | tee "$(sink "$WORK/ab-output.txt")"
[ "$DRY" = 1 ] || : > "$WORK/cores_used-output.txt"
for m in mobilenetv2_100 resnet152; do
    [ "$DRY" = 1 ] || { rm -rf "$WORK/inductor-$m" && mkdir -p "$WORK/inductor-$m"; }
    TORCHINDUCTOR_CACHE_DIR=$WORK/inductor-$m run_cmd "$PY" benchmarks/pytorch_compile_cores.py "$m" \
        | tee -a "$(sink "$WORK/cores_used-output.txt")"
done
