#!/usr/bin/env bash
# On the lent GPU machine (the device tool), from the repo root, after the TVM compiler's
# two parts were carried (.tv0, then .tv1 with the tvm-ffi and xgboost wheels; each copied to
# /tmp/parts, since a carried path is gone at the next call that does not carry it):
# install TVM 0.27 (compiler and all) beside the image's Python, probe CUDA, tune
# mobilenetv2_100 for the H100 with MetaSchedule measuring on the GPU, then measure untuned
# TVM, tuned TVM, PyTorch eager, torch.compile and JAX on the GPU in edgebench.full runs.
# Everything comes back in $OUT.
set -uo pipefail
# shellcheck source=experiments/tvm-cuda-h100-2026-11-27/install_tvm.sh
. experiments/tvm-cuda-h100-2026-11-27/install_tvm.sh
model=${MODEL:-mobilenetv2_100}
target=nvidia/nvidia-h100
t0=$(date +%s)
timeout -k 30 -s INT "${TUNE_S:-240}" python3 -m edgebench.tune --model "$model" --target "$target" \
  --trials "${TRIALS:-512}" --weights random --tuning-dir /tmp/tuning --no-progress \
  --summary "$OUT/tune-summary.json" >"$OUT/tune.log" 2>&1
echo "edgebench.tune rc=$? in $(( $(date +%s) - t0 )) s"; tail -n 15 "$OUT/tune.log"
tar czf "$OUT/tuning.tgz" -C /tmp tuning 2>/dev/null
common=(--weights random --profile quick --models "$model" --tvm-target "$target" --tasks parity latency)
t0=$(date +%s)
timeout "${UNTUNED_S:-120}" python3 -m edgebench.full "${common[@]}" --variants tvm --tvm-untuned \
  --tuning-dir /tmp/no-tuning --out /tmp/runs/1-tvm-untuned >"$OUT/full-untuned.log" 2>&1
echo "untuned run rc=$? in $(( $(date +%s) - t0 )) s"; tail -n 8 "$OUT/full-untuned.log"
t0=$(date +%s)
# shellcheck disable=SC2086  # word list
timeout "${FULL_S:-200}" python3 -m edgebench.full "${common[@]}" --variants ${VARIANTS:-tvm pytorch pytorch-compile jax} \
  --tuning-dir /tmp/tuning --out /tmp/runs/2-tuned >"$OUT/full-tuned.log" 2>&1
echo "tuned run rc=$? in $(( $(date +%s) - t0 )) s"; tail -n 12 "$OUT/full-tuned.log"
for r in /tmp/runs/*/; do [ -f "$r/report.md" ] || python3 -m edgebench.report "$r" >/dev/null 2>&1; done
tar czf "$OUT/runs.tgz" -C /tmp runs
