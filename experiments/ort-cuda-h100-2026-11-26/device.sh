#!/usr/bin/env bash
# On the lent GPU machine (the device tool), from the repo root, after the wheel's five parts
# were carried one per call (.og0 .. .og4, each copied to /tmp/parts: a carried path is gone
# from the machine at the next call that does not carry it): install onnxruntime-gpu 1.31.1 as pip would (the image's
# CPU onnxruntime removed first), probe the CUDA EP (probe.py), then run the suite's ORT
# cells on the six study models. Everything comes back in $OUT.
set -uo pipefail
here=experiments/ort-cuda-h100-2026-11-26
wheel=/tmp/onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl
sha=05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7
cat /tmp/parts/part00 /tmp/parts/part01 /tmp/parts/part02 /tmp/parts/part03 /tmp/parts/part04 >"$wheel"
echo "$sha  $wheel" | sha256sum -c - || exit 3
python3 -m pip uninstall -y -q onnxruntime
python3 -m pip install -q --no-index --no-deps --no-compile "$wheel" || exit 4
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; python3 -V
  python3 -m pip list 2>/dev/null | grep -i -E '^(torch|onnx|onnxruntime.*|timm|numpy|nvidia-cudnn.*|nvidia-cuda-runtime) '
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
PYTHONUNBUFFERED=1 timeout 120 python3 "$here/probe.py" >"$OUT/probe.jsonl" 2>&1
cut -c1-400 "$OUT/probe.jsonl"
run=/tmp/runs/${RUN_NAME:-ort-cuda}
models=${MODELS:-mobilenetv2_100 resnet152 efficientnet_b0 squeezenet1_1 vgg16 swin_tiny_patch4_window7_224}
# shellcheck disable=SC2086  # word lists
PYTHONUNBUFFERED=1 timeout "${RUN_S:-330}" python3 -m edgebench.full --weights random --profile quick \
  --models $models --variants ${VARIANTS:-onnxruntime onnxruntime-trt-fp16} \
  --tasks ${TASKS:-parity latency throughput} --out "$run" >"$OUT/full.log" 2>&1
echo "edgebench.full rc=$?"; tail -n 25 "$OUT/full.log"
[ -f "$run/report.md" ] || python3 -m edgebench.report "$run" >>"$OUT/full.log" 2>&1
tar czf "$OUT/run.tgz" -C /tmp/runs "${RUN_NAME:-ort-cuda}"
