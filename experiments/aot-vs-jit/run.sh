#!/usr/bin/env bash
# AOTInductor against torch.compile (JIT) and eager on one model, from a cold start
# (benchmarks/pytorch_aot_vs_jit.py: export, package compile with an empty inductor cache,
# load, check against eager, time the three). Prints what output.txt holds; WORK (default
# results/experiments/aot-vs-jit, emptied first) holds the package and inductor's cache.
# About 2 minutes on 2 cores.
#
#   bash experiments/aot-vs-jit/run.sh [MODEL]          # default mobilenetv2_100
#   bash experiments/aot-vs-jit/run.sh --dry-run        # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
model=mobilenetv2_100
case "${1:-}" in -* | "") run_options "$@" ;; *) model=$1; run_options ;; esac
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/aot-vs-jit}
if [ "$DRY" = 0 ]; then
    rm -rf "$WORK"
    mkdir -p "$WORK"
fi
TORCHINDUCTOR_CACHE_DIR=$WORK/inductor run_cmd "$PY" benchmarks/pytorch_aot_vs_jit.py \
    --work "$WORK" "$model"
