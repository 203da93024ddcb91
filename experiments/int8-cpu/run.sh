#!/usr/bin/env bash
# Reruns experiments/int8-cpu (README.md): onnxruntime-int8 against onnxruntime FP32 on the six
# study models, in the suite's own cells (ABBA rounds), for both INT8 forms, then the in-process
# ABBA of the two forms with ONNX Runtime's kernel counts. About 25 min on 2 cores.
#   PY (default .venv/bin/python), WORK (default results/experiments/int8-cpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/int8-cpu}
"$PY" benchmarks/int8_vs_fp32.py --rounds 2 --out "$WORK/tensorrt-form"
"$PY" benchmarks/int8_vs_fp32.py --rounds 2 --out "$WORK/cpu-form" --int8-form cpu
"$PY" experiments/int8-cpu/forms.py resnet152 vgg16 mobilenetv2_100 squeezenet1_1 \
    efficientnet_b0 swin_tiny_patch4_window7_224 | grep '^{' > "$WORK/forms.jsonl"
