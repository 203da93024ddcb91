#!/usr/bin/env bash
# Issue 33: TVM and ONNX Runtime at 1 and 2 threads beside a probe of the VM's vCPU pair
# (threads_vs_ort.py), on MobileNetV2's kept database (about 6 minutes).
#
#   bash experiments/tvm-vcpu-pair-2026-11-27/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-vcpu-pair-2026-11-27
MODEL=${MODEL:-mobilenetv2_100}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
db=$(tvm_best_db "$MODEL")
step "$PY" "$HERE/threads_vs_ort.py" compare --model "$MODEL" --tuning-dir "$db" --reps 6 \
    --json "$HERE/runs/$MODEL.json" 2>&1 | tee "$HERE/runs/$MODEL.txt"
