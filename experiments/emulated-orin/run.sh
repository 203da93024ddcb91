#!/usr/bin/env bash
# Issue 16, item 3: the suite on the emulated AGX Orin (arm64 under QEMU, jetson/emulated/).
# Needs root and Linux; about 20 minutes on 2 cores. Writes experiments/emulated-orin/item3-run/.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash jetson/emulated/setup.sh
out=experiments/emulated-orin/item3-run
rm -rf "$out.tmp"
bash jetson/emulated/run.sh python -m edgebench.full --models squeezenet1_1 mobilenetv2_100 \
  --variants pytorch onnxruntime jax tvm --tasks parity latency --tvm-untuned --out "$out.tmp"
mkdir -p "$out"
cp "$out.tmp"/{results.jsonl,run.json,report.md,summary.csv} "$out"/
rm -rf "$out.tmp"
