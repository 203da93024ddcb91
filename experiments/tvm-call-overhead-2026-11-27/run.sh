#!/usr/bin/env bash
# Issue 33: what calling a kernel costs TVM's Relax VM (and a node ORT), and how much of a
# tuned network's time that is (overhead.py), then the README's tables (table.py). About 3
# minutes on the 2-core Zen 4 (the chains 7 s and 33 s, the models 24-85 s each).
#
#   bash experiments/tvm-call-overhead-2026-11-27/run.sh
#   TARGET=host MODELS=efficientnet_b0 bash experiments/tvm-call-overhead-2026-11-27/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-call-overhead-2026-11-27
MODELS=${MODELS:-"efficientnet_b0 mobilenetv2_100 swin_tiny_patch4_window7_224"}
# The kept databases (experiments/tvm-databases/) were tuned on the Zen 3 VM; naming its target
# builds them (AVX2 code) on any x86-64 CPU that has AVX2, such as the Zen 4 VM.
TARGET=${TARGET:-'{"kind": "llvm", "mcpu": "znver3", "num-cores": 2}'}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
step "$PY" "$HERE/overhead.py" chains --target "$TARGET" --json "$HERE/runs/chains.json" 2>&1 \
    | tee "$HERE/runs/chains.txt"
# the same with a pool whose workers sleep at once: every launch then wakes one
TVM_THREAD_POOL_SPIN_COUNT=0 step "$PY" "$HERE/overhead.py" chains --target "$TARGET" \
    --json "$HERE/runs/chains-spin0.json" 2>&1 | tee "$HERE/runs/chains-spin0.txt"
for m in $MODELS; do
    step "$PY" "$HERE/overhead.py" network --model "$m" --tuning-dir "$(tvm_best_db "$m")" \
        --target "$TARGET" --json "$HERE/runs/$m.json" 2>&1 | grep -v -e '^\[[a-z]' -e 'Fast mode segfaults' \
        | tee "$HERE/runs/$m.txt"
done
"$PY" "$HERE/table.py" "$HERE/runs"
