#!/usr/bin/env bash
# Trials by measured time (python -m edgebench.tune --allocation measured: a first round of
# half batches, then caps by each task's share of the measured time) against even batches
# (--allocation uniform, the default) and against each model's kept database (issue 33's
# table, ../tvm-databases/), per model at 512 trials, --no-reuse, every other flag default:
#   1. tune with each rule in ALLOCATIONS, in that order, into its own tuning dir;
#   2. benchmarks/tvm_databases.py: the networks they build, one process, interleaved
#      rounds; the first arm (the first rule) is the baseline.
# Long: about 18 min of tuning per MobileNetV2 session, 22 per ResNet-152 one, on 2 cores.
# Rerunning resumes a session that did not finish.
#
#   bash experiments/tvm-measured-allocation-2026-11-27/run.sh
#   MODELS=resnet152 ALLOCATIONS=measured bash experiments/tvm-measured-allocation-2026-11-27/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-measured-allocation-2026-11-27
WORK=${WORK:-results/experiments/tvm-measured-allocation-2026-11-27}      # git-ignored
MODELS=${MODELS:-mobilenetv2_100}
ALLOCATIONS=${ALLOCATIONS:-"measured uniform"}
TRIALS=${TRIALS:-512}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
start_experiment "$HERE"

for m in $MODELS; do
    d=$HERE/runs/$m
    mkdir -p "$d"
    dirs=()
    for a in $ALLOCATIONS; do
        td=$WORK/$a
        step "$PY" -m edgebench.tune --model "$m" --trials "$TRIALS" --tuning-dir "$td" \
            --allocation "$a" --no-reuse --no-progress --summary "$d/tune-$a.json" \
            > "$d/tune-$a.log" 2>&1
        cp "$(find "$td" -path "*/$m-*/tuning.json" | head -1)" "$d/tuning-$a.json"
        dirs+=("$td")
    done
    step "$PY" benchmarks/tvm_databases.py --model "$m" --tuning-dirs "${dirs[@]}" \
        "$(tvm_best_db "$m")" --json "$d/databases.json" > "$d/databases.txt" 2>&1
done
