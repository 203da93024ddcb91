#!/usr/bin/env bash
# Winograd F(4x4, 3x3) for the 3x3 stride-1 convs (python -m edgebench.tune --conv2d winograd)
# against the direct conv, per model at the same 512 trials: tune with --conv2d winograd, then
#   1. benchmarks/tvm_databases.py: the Winograd build against the direct build of
#      ../tvm-six-models-2026-11-25 (same machine type, same defaults otherwise), one
#      process, interleaved rounds;
#   2. benchmarks/tvm_profile.py: the Winograd build's kernels beside ORT's, ABBA wall times;
#   3. size_rule.py: Winograd only for convs whose output is >= 28 (56) a side, as networks.
# The direct databases must exist first (bash experiments/tvm-six-models-2026-11-25/run.sh).
# Long: 15-30 min of tuning per model on 2 cores. Rerunning resumes the tuning.
#
#   bash experiments/tvm-winograd-2026-11-26/run.sh
#   MODELS="vgg16" bash experiments/tvm-winograd-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-winograd-2026-11-26}        # git-ignored
DIRECT=${DIRECT:-results/experiments/tvm-six-models-2026-11-25/tuning}
OUT=${OUT:-$WORK/runs}
TUNING_DIR=${TUNING_DIR:-$WORK/tuning}
MODELS=${MODELS:-"resnet152 vgg16"}
TRIALS=${TRIALS:-512}
export PYTHONPATH=$PWD

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

mkdir -p "$WORK"
record_cpu "$WORK/cpu.txt"
for m in $MODELS; do
    d=$OUT/$m
    mkdir -p "$d"
    # --no-reuse like the direct databases it is compared with.
    step "$PY" -m edgebench.tune --model "$m" --trials "$TRIALS" --tuning-dir "$TUNING_DIR" \
        --conv2d winograd --no-reuse --no-progress --summary "$d/tune-$TRIALS.json" \
        > "$d/tune-$TRIALS.log" 2>&1
    step "$PY" benchmarks/tvm_databases.py --model "$m" --tuning-dirs "$DIRECT" "$TUNING_DIR" \
        --json "$d/direct-vs-winograd.json" > "$d/direct-vs-winograd.txt" 2>&1
    step "$PY" benchmarks/tvm_profile.py --model "$m" --tuning-dir "$TUNING_DIR" \
        --json "$d/profile-$TRIALS.json" > "$d/profile-$TRIALS.txt" 2>&1
    # 3. the size rule: Winograd only where the output is >= N a side (no tuning: the two
    #    databases' records; size_rule.py)
    # shellcheck disable=SC2086 # RULES is a list of sizes
    step "$PY" "experiments/tvm-winograd-2026-11-26/size_rule.py" --model "$m" \
        --direct "$DIRECT" --winograd "$TUNING_DIR" --rules ${RULES:-28 56} \
        --json "$d/size-rule.json" > "$d/size-rule.txt" 2>&1
done

# The records this folder cites (the databases themselves stay under $WORK).
HERE=experiments/tvm-winograd-2026-11-26
cp "$WORK/cpu.txt" "$HERE/cpu.txt"
keep_records "$HERE" "$OUT" "$TUNING_DIR" "$MODELS" "tune-$TRIALS.json" \
    direct-vs-winograd.json direct-vs-winograd.txt "profile-$TRIALS.json" "profile-$TRIALS.txt" size-rule.json size-rule.txt
