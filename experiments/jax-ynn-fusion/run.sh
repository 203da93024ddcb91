#!/usr/bin/env bash
# The jax variant with and without XLA:CPU's YNNPACK library fusions, all six models.
# Usage: bash experiments/jax-ynn-fusion/run.sh > experiments/jax-ynn-fusion/output.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
models=(resnet152 mobilenetv2_100 squeezenet1_1 efficientnet_b0 vgg16 swin_tiny_patch4_window7_224)
for flags in "" "--xla_cpu_experimental_ynn_fusion_type="; do
  if [[ -z "$flags" ]]; then echo "XLA_FLAGS unset (jaxlib's default)"; else echo "XLA_FLAGS='${flags}'"; fi
  echo "model                          ms/image at batch 1, 2, 8"
  for m in "${models[@]}"; do
    # speed.py calls no xla_env.prepare(): the flags below are all that is in force.
    if [[ -z "$flags" ]]; then
      env -u XLA_FLAGS .venv/bin/python experiments/jax-ynn-fusion/speed.py "$m" 2>/dev/null
    else
      XLA_FLAGS="$flags" .venv/bin/python experiments/jax-ynn-fusion/speed.py "$m" 2>/dev/null
    fi
  done
done
