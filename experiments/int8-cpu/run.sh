#!/usr/bin/env bash
# Reruns experiments/int8-cpu (README.md): onnxruntime-int8 against onnxruntime FP32 on the six
# study models, in the suite's own cells (ABBA rounds, benchmarks/int8_vs_fp32.py), for both
# INT8 forms, then the in-process ABBA of the two forms with ONNX Runtime's kernel counts
# (benchmarks/int8_forms.py). About 25 min on 2 cores.
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
step "$PY" benchmarks/int8_vs_fp32.py --rounds 2 --out "$WORK/tensorrt-form"
step "$PY" benchmarks/int8_vs_fp32.py --rounds 2 --out "$WORK/cpu-form" --int8-form cpu
step "$PY" benchmarks/int8_forms.py resnet152 vgg16 mobilenetv2_100 squeezenet1_1 \
    efficientnet_b0 swin_tiny_patch4_window7_224 | { grep '^{' || [ "$DRY" = 1 ]; } \
    > "$(sink "$WORK/forms.jsonl")"
