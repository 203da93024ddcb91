#!/usr/bin/env bash
# ONNX Runtime's CUDA EP on a lent GPU machine (the device tool), from the repo root there,
# after the onnxruntime-gpu 1.31.1 wheel's five parts were carried one per call (.og0 ..
# .og4, each copied to /tmp/parts: a carried path is gone from the machine at the next call
# that does not carry it): join and check the wheel, install it as pip would (the image's CPU
# onnxruntime removed first), probe the CUDA EP (benchmarks/ort_gpu_probe.py), then run the
# suite's cells (edgebench.full, quick profile, random weights) and its report. Everything
# comes back in $OUT: machine.txt, probe.jsonl, full.log, run.tgz (the run directory).
#   RUN_NAME (default ort-cuda), MODELS (the six study models), VARIANTS (default onnxruntime
#   onnxruntime-trt-fp16), TASKS (default parity latency throughput), RUN_S (default 330)
#
#   bash experiments/ort-cuda-h100-2026-11-26/run.sh       # on the GPU machine, OUT set
#   bash experiments/ort-cuda-h100-2026-11-26/run.sh --dry-run   # the commands, run nothing
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
OUT=${OUT:-/tmp/out}
wheel=/tmp/onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl
sha=05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7
run=/tmp/runs/${RUN_NAME:-ort-cuda}
models=${MODELS:-mobilenetv2_100 resnet152 efficientnet_b0 squeezenet1_1 vgg16 swin_tiny_patch4_window7_224}
if [ "$DRY" = 1 ]; then
    echo "+ cat /tmp/parts/part0{0..4} > $wheel; sha256sum -c (sha256 $sha)" >&3
else
    cat /tmp/parts/part00 /tmp/parts/part01 /tmp/parts/part02 /tmp/parts/part03 /tmp/parts/part04 >"$wheel"
    echo "$sha  $wheel" | sha256sum -c - || exit 3
fi
step python3 -m pip uninstall -y -q onnxruntime
step python3 -m pip install -q --no-index --no-deps --no-compile "$wheel" || exit 4
if [ "$DRY" = 0 ]; then
    { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; python3 -V
      python3 -m pip list 2>/dev/null | grep -i -E '^(torch|onnx|onnxruntime.*|timm|numpy|nvidia-cudnn.*|nvidia-cuda-runtime) '
    } >"$OUT/machine.txt" 2>&1
    cat "$OUT/machine.txt"
fi
PYTHONUNBUFFERED=1 run_cmd timeout 120 python3 benchmarks/ort_gpu_probe.py \
    > "$(sink "$OUT/probe.jsonl")" 2>&1
[ "$DRY" = 1 ] || cut -c1-400 "$OUT/probe.jsonl"
# shellcheck disable=SC2086  # word lists
PYTHONUNBUFFERED=1 run_cmd timeout "${RUN_S:-330}" python3 -m edgebench.full --weights random \
    --profile quick --models $models --variants ${VARIANTS:-onnxruntime onnxruntime-trt-fp16} \
    --tasks ${TASKS:-parity latency throughput} --out "$run" > "$(sink "$OUT/full.log")" 2>&1
rc=$?
if [ "$DRY" = 0 ]; then
    echo "edgebench.full rc=$rc"
    tail -n 25 "$OUT/full.log"
fi
[ -f "$run/report.md" ] || run_cmd python3 -m edgebench.report "$run" >> "$(sink "$OUT/full.log")" 2>&1
step tar czf "$OUT/run.tgz" -C /tmp/runs "${RUN_NAME:-ort-cuda}"
