#!/usr/bin/env bash
# One of run.sh's databases against ONNX Runtime, as ../tvm-six-models-2026-11-27/ measures
# the kept ones: TVM and ORT parity in one suite run, then ORT and TVM alternated in processes
# of their own (pool_vs_ort.py compare --arms ort,tvm, REPS blocks, every TVM run beside an
# ORT run). Records: vs-ort/<model>-<rule>/parity.jsonl, vs-ort.{json,txt}; the table:
#   .venv/bin/python experiments/tvm-six-models-2026-11-27/table.py experiments/tvm-measured-allocation-2026-11-27/vs-ort
#
#   bash experiments/tvm-measured-allocation-2026-11-27/vs_ort.sh mobilenetv2_100 uniform
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-measured-allocation-2026-11-27
WORK=${WORK:-results/experiments/tvm-measured-allocation-2026-11-27}      # git-ignored
COMPARE=experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py
m=$1
rule=$2
db=$WORK/$rule
d=$HERE/vs-ort/$m-$rule

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
start_experiment "$HERE"
mkdir -p "$d"
step "$PY" -m edgebench.full --models "$m" --variants tvm onnxruntime --tasks parity \
    --tuning-dir "$db" --out "$WORK/parity-$m-$rule" --resume > "$WORK/parity-$m-$rule.log" 2>&1
cp "$WORK/parity-$m-$rule/results.jsonl" "$d/parity.jsonl"
step "$PY" "$COMPARE" compare --model "$m" --tuning-dir "$db" --arms ort,tvm \
    --reps "${REPS:-4}" --json "$d/vs-ort.json" 2>&1 | tee "$d/vs-ort.txt"
