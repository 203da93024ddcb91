#!/usr/bin/env bash
# Issue 33: TVM's thread-pool settings against ONNX Runtime, per model, arms alternated ABBA
# in processes of their own (pool_vs_ort.py). Per model: its best database (tvm_best_db:
# restored from experiments/tvm-databases/, else tuned here at 512 trials, 10-30 min on 2
# cores), both variants converted once, then 4 blocks of the arms (about 8 min).
#
#   bash experiments/tvm-threadpool-vs-ort-2026-11-27/run.sh
#   MODELS=squeezenet1_1 bash experiments/tvm-threadpool-vs-ort-2026-11-27/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-threadpool-vs-ort-2026-11-27
MODELS=${MODELS:-"mobilenetv2_100 efficientnet_b0 squeezenet1_1"}
WORK=results/experiments/tvm-threadpool-vs-ort-2026-11-27     # git-ignored

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    db=$(tvm_best_db "$m")
    tune_best_db "$m" "$WORK" "$HERE/runs"      # resumes it, or tunes it here
    step "$PY" "$HERE/pool_vs_ort.py" prepare --model "$m" --tuning-dir "$db"
    step "$PY" "$HERE/pool_vs_ort.py" compare --model "$m" --tuning-dir "$db" \
        --reps "${REPS:-4}" --json "$HERE/runs/$m.json" 2>&1 | tee "$HERE/runs/$m.txt"
done
