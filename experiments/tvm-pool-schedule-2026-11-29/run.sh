#!/usr/bin/env bash
# Issue 33 on the Zen 5: a hand-written sketch for max pooling (converters/tvm/pool_schedule.py).
# SqueezeNet 1.1's three pools (five kernels with split concats) ran 63 us warm and 136 us in
# the network against ORT's 115 (../tvm-kernel-ceiling-zen5-2026-11-29/runs/squeezenet1_1/
# kernels.txt, a slow phase): MetaSchedule's generic rules keep the padding as a buffer,
# reduce the window through an rfactor buffer and do not vectorise the channels.
# 1. pools.py: the best database's pool kernels against the rule's sketches, alone and warm;
# 2. SqueezeNet 1.1 tuned from nothing at 512 trials as ../tvm-transfer-multi-2026-11-29/
#    measured.sh tuned it (multi-vector, pad-pair, --allocation measured, transfer from the
#    same three databases), now with the rule;
# 3. that database's network beside measured.sh's, in one process;
# 4. against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort);
# 5. kernels_vs_ort.py (../tvm-resnet152-zen4-2026-11-28/): every kernel warm, cold and in the
#    network beside ORT's node.
# About 30 minutes on the 2-core Zen 5. measured.sh's database is restored from
# ../tvm-databases/multi-vector-transfer/ where missing.
#
#   bash experiments/tvm-pool-schedule-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-pool-schedule-2026-11-29
WORK=results/experiments/tvm-pool-schedule-2026-11-29   # git-ignored: the database
BEFORE=results/experiments/tvm-transfer-multi-2026-11-29/tuning-measured
M=squeezenet1_1
RUNS=$HERE/runs/$M

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-transfer-multi-2026-11-29/sources.sh
. experiments/tvm-transfer-multi-2026-11-29/sources.sh   # transfer_sources

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M"
transfer_sources "$M"
restore_tvm_db "$M" "$BEFORE" experiments/tvm-databases/multi-vector-transfer
[ -f "$RUNS/pools.json" ] || step "$PY" "$HERE/pools.py" --model "$M" --tuning-dir "$BEFORE" \
    --json "$RUNS/pools.json" 2> "$WORK/pools.log" | tee "$RUNS/pools.txt"
if [ ! -f "$RUNS/tune.json" ]; then
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning" \
        --no-reuse --design-space multi-vector \
        --no-transfer --out-channels pad-pair --allocation measured \
        --transfer-from "${from[@]}" --no-progress --summary "$RUNS/tune.json" \
        > "$WORK/tune-$M.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$M.log" > "$RUNS/tune.log"
fi
networks_in_one_process "$M" "$RUNS/networks" "$BEFORE" "$WORK/tuning"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning" "$WORK/ort-$M" "$RUNS"
[ -f "$RUNS/kernels.json" ] || step "$PY" experiments/tvm-resnet152-zen4-2026-11-28/kernels_vs_ort.py \
    --model "$M" --tuning-dir "$WORK/tuning" --json "$RUNS/kernels.json" \
    2> "$WORK/kernels.log" | tee "$RUNS/kernels.txt"

# 6. The other study models with max pools, on their kept Zen 5 databases
#    (../tvm-six-models-zen5-2026-11-29/, restored from ../tvm-databases/): pools.py only.
#    ResNet-152 has one pool, VGG16 five (2x2, stride 2); the other three models have none.
KEPT=$WORK/kept
for m in resnet152 vgg16; do
    mkdir -p "$HERE/runs/$m"
    restore_tvm_db "$m" "$KEPT"
    [ -f "$HERE/runs/$m/pools.json" ] || step "$PY" "$HERE/pools.py" --model "$m" \
        --tuning-dir "$KEPT" --json "$HERE/runs/$m/pools.json" 2> "$WORK/pools-$m.log" \
        | tee "$HERE/runs/$m/pools.txt"
done
