#!/usr/bin/env bash
# The jax variant with and without XLA:CPU's YNNPACK library fusions, all six models:
# benchmarks/jax_batch_speed.py per model, once with XLA_FLAGS unset (jaxlib's default), once
# with --xla_cpu_experimental_ynn_fusion_type= (no library fusions), each model in a process of
# its own. About 5 minutes on 2 cores.
#
#   bash experiments/jax-ynn-fusion/run.sh > experiments/jax-ynn-fusion/output.txt
#   bash experiments/jax-ynn-fusion/run.sh --dry-run     # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
PY=${PY:-.venv/bin/python}
models=(resnet152 mobilenetv2_100 squeezenet1_1 efficientnet_b0 vgg16 swin_tiny_patch4_window7_224)
for flags in "" "--xla_cpu_experimental_ynn_fusion_type="; do
  if [[ -z "$flags" ]]; then echo "XLA_FLAGS unset (jaxlib's default)"; else echo "XLA_FLAGS='${flags}'"; fi
  echo "model                          ms/image at batch 1, 2, 8"
  for m in "${models[@]}"; do
    if [[ -z "$flags" ]]; then
      run_cmd env -u XLA_FLAGS "$PY" benchmarks/jax_batch_speed.py "$m" 2>/dev/null
    else
      run_cmd env XLA_FLAGS="$flags" "$PY" benchmarks/jax_batch_speed.py "$m" 2>/dev/null
    fi
  done
done
