#!/usr/bin/env bash
# The suite on the emulated AGX Orin (arm64 under QEMU, jetson/emulated/): the parity and
# latency command of README.md, every artifact built inside the root (an empty .emulated/cache).
# Needs root and Linux; about 20 minutes on 2 cores. Writes experiments/emulated-orin/item3-run/.
#
#   bash experiments/emulated-orin/run.sh
#   bash experiments/emulated-orin/run.sh --dry-run     # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
out=experiments/emulated-orin/item3-run
step bash jetson/emulated/setup.sh
[ "$DRY" = 1 ] || rm -rf "$out.tmp"
step bash jetson/emulated/run.sh python -m edgebench.full --models squeezenet1_1 mobilenetv2_100 \
  --variants pytorch onnxruntime jax tvm --tasks parity latency --tvm-untuned --out "$out.tmp"
if [ "$DRY" = 0 ]; then
  mkdir -p "$out"
  cp "$out.tmp"/{results.jsonl,run.json,report.md,summary.csv} "$out"/
  rm -rf "$out.tmp"
fi
