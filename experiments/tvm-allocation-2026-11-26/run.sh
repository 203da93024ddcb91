#!/usr/bin/env bash
# Trials by share of the work (python -m edgebench.tune --allocation share) against even
# batches (--allocation uniform, the default: every database of
# ../tvm-six-models-2026-11-25), per model at the same 512 trials: tune, then
#   1. benchmarks/tvm_databases.py: the share build against the uniform build, one process,
#      interleaved rounds (same machine type, same defaults otherwise: --no-reuse, direct conv);
#   2. benchmarks/tvm_profile.py: the share build's kernels beside ORT's, ABBA wall times.
# The uniform databases must exist first (bash experiments/tvm-six-models-2026-11-25/run.sh).
# Long: about 15 min of tuning per model on 2 cores. Rerunning resumes the tuning.
#
#   bash experiments/tvm-allocation-2026-11-26/run.sh
#   MODELS="resnet152" bash experiments/tvm-allocation-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-allocation-2026-11-26}      # git-ignored
UNIFORM=${UNIFORM:-results/experiments/tvm-six-models-2026-11-25/tuning}
OUT=${OUT:-$WORK/runs}
TUNING_DIR=${TUNING_DIR:-$WORK/tuning}
MODELS=${MODELS:-"resnet152 swin_tiny_patch4_window7_224 efficientnet_b0"}
TRIALS=${TRIALS:-512}
export PYTHONPATH=$PWD

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

mkdir -p "$WORK"
record_cpu "$WORK/cpu.txt"
for m in $MODELS; do
    d=$OUT/$m
    mkdir -p "$d"
    step "$PY" -m edgebench.tune --model "$m" --trials "$TRIALS" --tuning-dir "$TUNING_DIR" \
        --allocation share --no-reuse --no-progress --summary "$d/tune-$TRIALS.json" \
        > "$d/tune-$TRIALS.log" 2>&1
    step "$PY" benchmarks/tvm_databases.py --model "$m" --tuning-dirs "$UNIFORM" "$TUNING_DIR" \
        --json "$d/uniform-vs-share.json" > "$d/uniform-vs-share.txt" 2>&1
    step "$PY" benchmarks/tvm_profile.py --model "$m" --tuning-dir "$TUNING_DIR" \
        --json "$d/profile-$TRIALS.json" > "$d/profile-$TRIALS.txt" 2>&1
done

# The records this folder cites (the databases themselves stay under $WORK).
HERE=experiments/tvm-allocation-2026-11-26
cp "$WORK/cpu.txt" "$HERE/cpu.txt"
keep_records "$HERE" "$OUT" "$TUNING_DIR" "$MODELS" "tune-$TRIALS.json" "tune-$TRIALS.log" \
    uniform-vs-share.json uniform-vs-share.txt "profile-$TRIALS.json" "profile-$TRIALS.txt"
