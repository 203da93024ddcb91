#!/usr/bin/env bash
# Why do resnet152's tuned kernels run 1.5-2x their database best in the network? In one
# process: each top kernel in the network, alone, and the database's figure
# (kernel_vs_network.py); then the heaviest tasks' best records re-measured with
# MetaSchedule's own builder and runner (runner_remeasure.py). No tuning: the direct
# database of ../tvm-six-models-2026-11-25 must exist (its run.sh). About 10 minutes.
#
#   bash experiments/tvm-kernel-vs-network-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
PY=${PY:-.venv/bin/python}
HERE=experiments/tvm-kernel-vs-network-2026-11-26
DB=${DB:-results/experiments/tvm-six-models-2026-11-25/tuning}
MODEL=${MODEL:-resnet152}
export PYTHONPATH=$PWD
mkdir -p "$HERE/runs"
grep -m1 "model name" /proc/cpuinfo > "$HERE/cpu.txt"
grep -o -w -m1 -E "avx512f|avx2" /proc/cpuinfo | sort -u | tr '\n' ' ' >> "$HERE/cpu.txt"
"$PY" "$HERE/kernel_vs_network.py" --model "$MODEL" --tuning-dir "$DB" --top 10 --rounds 8 \
    --json "$HERE/runs/$MODEL.json" 2>&1 | grep -v '^\[' > "$HERE/runs/$MODEL.txt"
"$PY" "$HERE/runner_remeasure.py" --model "$MODEL" --tuning-dir "$DB" \
    --tasks fused_conv2d16_add9_relu71 fused_conv2d15_add9_relu71 \
    fused_conv2d13_add10_add11_relu81 --json "$HERE/runs/$MODEL-runner.json" 2>&1 \
    | grep -v '^\[\|INFO' > "$HERE/runs/$MODEL-runner.txt"
