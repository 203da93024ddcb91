#!/usr/bin/env bash
# Reruns experiments/int8-cpu (README.md): onnxruntime-int8 (ONNX Runtime's CPU form, its
# default) against onnxruntime FP32 on the six study models, in the suite's own cells (ABBA
# rounds, benchmarks/int8_vs_fp32.py); then one suite run with the layers task on the four
# models where the question is why (pytorch, onnxruntime, onnxruntime-int8 with the symmetric
# TensorRT form profiled beside its own, tvm from the kept Zen 4 databases where this CPU is a
# Zen 4, jax); then the in-process ABBA of the two forms with ONNX Runtime's kernel counts
# (benchmarks/int8_forms.py); and what the layers task costs a run of resnet152 and
# mobilenetv2_100. About 55 min on 2 cores.
#   PY (default .venv/bin/python), WORK (default results/experiments/int8-cpu)
#
#   bash experiments/int8-cpu/run.sh
#   bash experiments/int8-cpu/run.sh --dry-run     # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/int8-cpu}
[ "$DRY" = 1 ] || mkdir -p "$WORK"
[ "$DRY" = 1 ] || record_cpu "$WORK/cpu.txt"
step "$PY" benchmarks/int8_vs_fp32.py --rounds 2 --out "$WORK/cpu-form"
for m in resnet152 mobilenetv2_100 squeezenet1_1; do
    restore_tvm_db "$m" "$WORK/tuning" data/tvm-databases/recipes-zen4 'llvm-znver4-*'
done
[ -f "$WORK/layers/results.jsonl" ] || step "$PY" -m edgebench.full \
    --models resnet152 mobilenetv2_100 squeezenet1_1 efficientnet_b0 \
    --variants pytorch onnxruntime onnxruntime-int8 tvm jax --tasks latency layers \
    --tuning-dir "$WORK/tuning" --layers-top 12 --int8-both-forms --out "$WORK/layers"
# What the layers task costs a run (run.json's time_budget.tasks_s, the report's time line).
[ -f "$WORK/layers-cost/results.jsonl" ] || step "$PY" -m edgebench.full \
    --models resnet152 mobilenetv2_100 \
    --variants pytorch pytorch-compile onnxruntime onnxruntime-int8 tvm jax \
    --tasks parity accuracy latency throughput layers --tuning-dir "$WORK/tuning" \
    --out "$WORK/layers-cost"
step "$PY" benchmarks/int8_forms.py resnet152 vgg16 mobilenetv2_100 squeezenet1_1 \
    efficientnet_b0 swin_tiny_patch4_window7_224 | { grep '^{' || [ "$DRY" = 1 ]; } \
    > "$(sink "$WORK/forms.jsonl")"
