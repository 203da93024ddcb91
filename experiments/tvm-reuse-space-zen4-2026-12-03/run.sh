#!/usr/bin/env bash
# Issue 33: should reuse copy records from a database tuned in another design space?
# On Zen 5 (../tvm-reuse-effnet-2026-12-02/) EfficientNet-B0 (one-vector space, no recipe)
# that copied 77 records of 6 kernels from MobileNetV2's multi-vector database built networks
# 1.09x and 1.14x the 11-29 database's p50, against 1.02x and 1.03x without reuse. The change
# under test reuses only from databases of the session's layout and design space
# (transfer.reuse_alike), as cost-model transfer already did.
#
# 1. MobileNetV2 tuned by the plain command (its recipe: multi-vector), the sibling database.
# 2. Four EfficientNet-B0 sessions from nothing by the plain command, each tuning dir holding
#    a copy of that sibling, arms alternated (ABBA): BASE (the code before the change, a
#    git archive of $BASE run from its own folder) seed 0, HEAD (this working tree) seed 0,
#    HEAD seed 1, BASE seed 1:
#
#      python -m edgebench.tune --model efficientnet_b0 --trials 512 --seed S
#
# 3. The four networks and the 11-28 Zen 4 database's in one process
#    (benchmarks/tvm_databases.py): runs/networks.*; MobileNetV2's beside its 11-27 database.
# 4. HEAD seed 0's network against ONNX Runtime, parity and 4 alternated runs each.
#
#   bash experiments/tvm-reuse-space-zen4-2026-12-03/run.sh      # ~75 min on the 2-core Zen 4
#
# A rerun keeps what is recorded (runs/ARM/tune.json, runs/*.json).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
ROOT=$PWD
HERE=experiments/tvm-reuse-space-zen4-2026-12-03
WORK=$ROOT/results/experiments/tvm-reuse-space-zen4-2026-12-03   # git-ignored
BASE=${BASE:-825e93c}
SESSIONS=${SESSIONS:-"base-s0 head-s0 head-s1 base-s1"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
case $PY in /*) ;; *) PY=$ROOT/$PY ;; esac
mkdir -p "$WORK"
RECIPE=auto REUSE=1 tune_from_nothing mobilenetv2_100 "$WORK/siblings" \
    "$HERE/runs/mobilenetv2_100" "$WORK/tune-mobilenetv2_100.log" || exit 1
sib=$(find "$WORK/siblings" -mindepth 2 -maxdepth 2 -type d -name 'mobilenetv2_100-*' | head -1)
[ -n "$sib" ] || { echo "no MobileNetV2 database in $WORK/siblings" >&2; exit 1; }
if [ ! -d "$WORK/base-tree" ]; then
    mkdir -p "$WORK/base-tree" && git archive "$BASE" | tar -x -C "$WORK/base-tree" || exit 1
fi
for arm in $SESSIONS; do
    dir=$WORK/$arm
    slug=$dir/$(basename "$(dirname "$sib")")
    if [ ! -f "$HERE/runs/$arm/tune.json" ] && [ ! -d "$slug/$(basename "$sib")" ]; then
        mkdir -p "$slug" && cp -r "$sib" "$slug/" && rm -rf "$slug/$(basename "$sib")/logs"
    fi
    tree=$ROOT
    case $arm in base-*) tree=$WORK/base-tree ;; esac
    # the plain command: recipe, reuse and transfer as they default
    (cd "$tree" && export PYTHONPATH=$tree &&
        RECIPE=auto REUSE=1 tune_from_nothing efficientnet_b0 "$dir" "$ROOT/$HERE/runs/$arm" \
            "$WORK/tune-$arm.log" --seed "${arm##*-s}") || exit 1
done
restore_tvm_db efficientnet_b0 "$WORK/kept-1128" experiments/tvm-databases
restore_tvm_db mobilenetv2_100 "$WORK/kept-1128" experiments/tvm-databases
dirs=("$WORK/kept-1128")
for arm in $SESSIONS; do dirs+=("$WORK/$arm"); done
networks_in_one_process efficientnet_b0 "$HERE/runs/networks" "${dirs[@]}"
networks_in_one_process mobilenetv2_100 "$HERE/runs/networks-mobilenetv2" \
    "$WORK/kept-1128" "$WORK/siblings"
mkdir -p "$HERE/runs/head-s0" "$WORK/ort"
[ -f "$HERE/runs/head-s0/vs-ort.json" ] ||
    parity_and_vs_ort efficientnet_b0 "$WORK/head-s0" "$WORK/ort" "$HERE/runs/head-s0"
