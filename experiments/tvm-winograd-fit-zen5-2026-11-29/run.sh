#!/usr/bin/env bash
# Issue 33 on the Zen 5: Winograd with the tile that fits each conv (--conv2d winograd-fit).
# ResNet-152's best direct database runs its 14x14 3x3 conv (35 calls, 37 % of the network)
# at 487 us: 231 MFLOP at 474 GFLOP/s, 95 % of the FMA ceiling measured on this CPU
# (../tvm-kernel-ceiling-zen5-2026-11-29/). Tiles cannot get it further; fewer multiplies can.
# F(4x4) did not gain there on the Zen 3 (../tvm-winograd-2026-11-26/): it pads 14x14 to
# 16x16 and quadruples a weight the network streams from memory. F(2x2) covers 14x14
# exactly with 16 multiplies per 2x2 tile instead of 36 (2.25x fewer than direct) and a
# weight 16/9 the direct one. winograd-fit: F(4x4) at 56x56 and 28x28, F(2x2) at 14x14,
# direct at 7x7 (odd). For ResNet-152, from nothing:
# 1. tuned at 512 trials with its best database's flags (../tvm-transfer-multi-2026-11-29/:
#    multi-vector, measured allocation, cold runner, transfer from the other three
#    multi-vector databases) and --conv2d winograd-fit;
# 2. its network beside that direct database's, interleaved in one process;
# 3. against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort).
# About 25 minutes on the 2-core Zen 5. The direct database and the transfer sources are
# restored from experiments/tvm-databases/ where missing.
#
#   bash experiments/tvm-winograd-fit-zen5-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-winograd-fit-zen5-2026-11-29
WORK=results/experiments/tvm-winograd-fit-zen5-2026-11-29   # git-ignored: the database
DIRECT=results/experiments/tvm-transfer-multi-2026-11-29/tuning
M=resnet152
RUNS=$HERE/runs/$M

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-transfer-multi-2026-11-29/sources.sh
. experiments/tvm-transfer-multi-2026-11-29/sources.sh   # transfer_sources

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M"
transfer_sources "$M"
restore_tvm_db "$M" "$DIRECT" experiments/tvm-databases/multi-vector-transfer
# shellcheck disable=SC2046  # a word list
tune_from_nothing "$M" "$WORK/tuning" "$RUNS" "$WORK/tune-$M.log" $(tvm_best_flags "$M") \
    --design-space multi-vector --conv2d winograd-fit --no-transfer --transfer-from "${from[@]}" || exit 1
networks_in_one_process "$M" "$RUNS/networks" "$DIRECT" "$WORK/tuning"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning" "$WORK/ort-$M" "$RUNS"
