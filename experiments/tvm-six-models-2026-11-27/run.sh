#!/usr/bin/env bash
# Issue 33: the six study models, each with its best kept TVM database, against ONNX Runtime
# on one day. Per model: its database (tvm_best_db: restored from experiments/tvm-databases/,
# else tuned here at 512 trials with the flags of issue 33's table, 10-35 min on 2 cores),
# TVM and ORT parity in one suite run, then ORT and TVM alternated in processes of their own
# (pool_vs_ort.py compare --arms ort,tvm: 4 blocks, every TVM run beside an ORT run).
#
#   bash experiments/tvm-six-models-2026-11-27/run.sh
#   MODELS=vgg16 bash experiments/tvm-six-models-2026-11-27/run.sh
#   HERE=experiments/OTHER WORK=results/experiments/OTHER bash .../run.sh   # records elsewhere
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
SCRIPTS=experiments/tvm-six-models-2026-11-27
HERE=${HERE:-$SCRIPTS}                                 # where the records go
MODELS=${MODELS:-"mobilenetv2_100 resnet152 vgg16 swin_tiny_patch4_window7_224 efficientnet_b0 squeezenet1_1"}
WORK=${WORK:-results/experiments/tvm-six-models-2026-11-27}     # git-ignored
COMPARE=experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
for m in $MODELS; do
    db=$(tvm_best_db "$m")
    mkdir -p "$HERE/runs/$m"
    tune_best_db "$m" "$WORK" "$HERE/runs/$m"      # resumes it, or tunes it here
    step "$PY" -m edgebench.full --models "$m" --variants tvm onnxruntime --tasks parity \
        --tuning-dir "$db" --out "$WORK/parity-$m" --resume > "$WORK/parity-$m.log" 2>&1
    cp "$WORK/parity-$m/results.jsonl" "$HERE/runs/$m/parity.jsonl"
    step "$PY" "$COMPARE" compare --model "$m" --tuning-dir "$db" --arms ort,tvm \
        --reps "${REPS:-4}" --json "$HERE/runs/$m/vs-ort.json" 2>&1 | tee "$HERE/runs/$m/vs-ort.txt"
done
"$PY" "$SCRIPTS/table.py" "$HERE/runs"
