#!/usr/bin/env bash
# Rerun "cost-model transfer and NHWC at 512 trials (mobilenetv2_100)": for seeds 0, 1, 2, a
# 512-trial NCHW session without and with the cost model pre-trained on the five other study
# models' 512-trial databases, an NHWC session; the six/nine networks timed interleaved in one
# process (benchmarks/tvm_databases.py); the 1.5x-of-ORT check on each; the other five models
# built untuned in NHWC (parity); the per-layer profile. About 1 h 30 min of tuning on 2 cores.
#
# Needs the five other models' NCHW default-space databases: run experiments/tvm-six-models/run.sh
# first (its default TUNING_DIR is what SIX_TUNING points at), or set SIX_TUNING.
#
#   bash experiments/tvm-transfer/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                         # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-transfer}     # git-ignored
SIX_TUNING=${SIX_TUNING:-results/experiments/tvm-six-models/tuning}
SEEDS=${SEEDS:-"0 1 2"}
MODEL=mobilenetv2_100
T=$WORK/tuning
mkdir -p "$WORK/summaries" "$WORK/runs"

FIVE=()                                # <tuning-dir>/<target-slug>/<model>-3x224x224
for m in efficientnet_b0 resnet152 squeezenet1_1 vgg16 swin_tiny_patch4_window7_224; do
    for db in "$SIX_TUNING"/*/"$m"-3x224x224; do [ -d "$db" ] && FIVE+=("$db"); done
done
if [ "${#FIVE[@]}" -ne 5 ]; then
    echo "need the five NCHW databases under $SIX_TUNING (found ${#FIVE[@]}): run experiments/tvm-six-models/run.sh" >&2
    exit 2
fi

tune() {   # tune NAME SEED [options]: a 512-trial session into $T/NAME
    local name=$1 seed=$2; shift 2
    "$PY" -m edgebench.tune --model "$MODEL" --trials 512 --seed "$seed" --tuning-dir "$T/$name" \
        --no-progress --summary "$WORK/summaries/tune-$name.json" "$@"
}
check() {  # check NAME RUN: the 1.5x-of-ORT check (TVM and ORT in one run) on $T/NAME
    "$PY" -m edgebench.full --models "$MODEL" --variants tvm onnxruntime --tasks parity latency \
        --tuning-dir "$T/$1" --out "$WORK/runs/$2" --resume
}

for s in $SEEDS; do
    tune "nchw-s$s" "$s" --layout NCHW --design-space default
    tune "xfer-s$s" "$s" --layout NCHW --design-space default --transfer-from "${FIVE[@]}"
    # 2026-11-23 this was NHWC + the NCHW transfer; today a session only learns from databases
    # of its own layout and design space, so the NCHW five are skipped: NHWC without transfer.
    tune "nhwc-s$s" "$s" --layout NHWC --design-space default
done

pairs=() nhwc=()
for s in $SEEDS; do pairs+=("$T/nchw-s$s" "$T/xfer-s$s"); nhwc+=("$T/nchw-s$s" "$T/xfer-s$s" "$T/nhwc-s$s"); done
"$PY" benchmarks/tvm_databases.py --model "$MODEL" --tuning-dirs "${pairs[@]}" --json "$WORK/in-network-1.json"
rev=(); for ((i=${#pairs[@]}-1; i>=0; i--)); do rev+=("${pairs[i]}"); done
"$PY" benchmarks/tvm_databases.py --model "$MODEL" --tuning-dirs "${rev[@]}" --json "$WORK/in-network-2.json"
"$PY" benchmarks/tvm_databases.py --model "$MODEL" --tuning-dirs "${nhwc[@]}" --json "$WORK/in-network-nhwc.json"

for s in $SEEDS; do check "xfer-s$s" "check-transfer-seed$s"; check "nhwc-s$s" "check-nhwc-seed$s"; done

# The other five models import, build and match PyTorch in NHWC (untuned: no database)
"$PY" -m edgebench.full --models efficientnet_b0 squeezenet1_1 resnet152 vgg16 \
    swin_tiny_patch4_window7_224 --variants tvm --tasks parity --tvm-untuned \
    --tuning-dir "$WORK/empty" --out "$WORK/runs/nhwc-untuned-parity" --resume

# Ad-hoc profiles (not run records)
"$PY" experiments/tvm-transfer/profile/per_layer.py "$T/nchw-s0" | tee "$WORK/per_layer-seed0.txt"
"$PY" experiments/tvm-transfer/profile/nhwc_tasks.py | tee "$WORK/nhwc_tasks.txt"
"$PY" experiments/tvm-wide-vector/summarize_checks.py "$WORK/runs"
