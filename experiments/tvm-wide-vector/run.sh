#!/usr/bin/env bash
# Rerun "vector-width tiling for channels-last kernels": mobilenetv2_100, 512 trials, NHWC,
# MetaSchedule's default space (seed 0) against vector-width tiling (seeds 0, 1, 2, today's
# CPU default); the networks timed interleaved in one process; the 1.5x-of-ORT check on each;
# the three-task A/B; SqueezeNet 1.1; cost-model transfer in the vector-width space.
# About 1 h 30 min of tuning on 2 cores.
#
#   bash experiments/tvm-wide-vector/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                         # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-wide-vector}  # git-ignored
SEEDS=${SEEDS:-"0 1 2"}
T=$WORK/tuning
mkdir -p "$WORK/summaries" "$WORK/runs"

tune() {   # tune MODEL NAME SEED [options]: a 512-trial session into $T/NAME (fresh: no transfer)
    local model=$1 name=$2 seed=$3; shift 3
    "$PY" -m edgebench.tune --model "$model" --trials 512 --seed "$seed" --tuning-dir "$T/$name" \
        --no-progress --summary "$WORK/summaries/tune-$name.json" "$@"
}
check() {  # check MODEL NAME RUN: the 1.5x-of-ORT check (TVM and ORT in one run) on $T/NAME
    "$PY" -m edgebench.full --models "$1" --variants tvm onnxruntime --tasks parity latency \
        --tuning-dir "$T/$2" --out "$WORK/runs/$3" --resume
}

tune mobilenetv2_100 default-s0 0 --layout NHWC --design-space default     # the baseline
dirs=("$T/default-s0")
for s in $SEEDS; do
    tune mobilenetv2_100 "wv-s$s" "$s"            # defaults: NHWC, --design-space auto
    dirs+=("$T/wv-s$s")
done
"$PY" benchmarks/tvm_databases.py --model mobilenetv2_100 --tuning-dirs "${dirs[@]}" \
    --json "$WORK/in-network-1.json"
for s in $SEEDS; do check mobilenetv2_100 "wv-s$s" "check-wv-seed$s"; done

# Three slow 56x56 tasks alone, 30 candidates each, both spaces (ab.json)
"$PY" experiments/tvm-wide-vector/space-ab/space_ab.py fused_conv2d4,fused_conv2d6,fused_conv2d7 \
    90 0,1 default,auto "$WORK/space-ab"

# SqueezeNet 1.1, the worst of the six in NCHW
tune squeezenet1_1 wv-sq 0
check squeezenet1_1 wv-sq check-wv-squeezenet1_1

# Transfer in the vector-width space: seed 0 pre-trained on SqueezeNet's vector-width database
# (the 2026-11-23 run also tried the five NCHW default-space databases: 1.75x slower; today's
# code skips databases of another layout or design space, so that arm cannot be rerun)
tune mobilenetv2_100 wv-xfer-sq-s0 0 --transfer-from "$T/wv-sq"
"$PY" benchmarks/tvm_databases.py --model mobilenetv2_100 --tuning-dirs "$T/wv-s0" \
    "$T/wv-xfer-sq-s0" --json "$WORK/in-network-transfer.json"

"$PY" experiments/tvm-wide-vector/summarize_checks.py "$WORK/runs"
