#!/usr/bin/env bash
# Issue 33 on the Zen 5: SqueezeNet 1.1 with Winograd. Its 3x3 expand convs (outputs 55x55,
# 27x27 and 13x13) take about half its time. F(4x4) pads them to 56, 28 and 16 and still does
# 2.4-3.9x fewer multiplies; on the Zen 3 it ran 0.978x the direct network
# (../tvm-winograd-2026-11-26/, within that VM's noise). From nothing, as
# ../tvm-pool-schedule-2026-11-29/run.sh tuned SqueezeNet 1.1 (multi-vector, pad-pair,
# measured allocation, transfer from the same three databases, the pool sketch):
# 1. tuned at 512 trials with --conv2d winograd (F(4x4) everywhere);
# 2. its network beside the pool-schedule database's, interleaved in one process;
# 3. against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort);
# 4. tuned again with --conv2d winograd-fit, which leaves the two 13x13 convs direct (F(4x4)
#    pads them 51 %; in 3.'s profile they ran 1.60x and 1.22x their tuned time);
# 5. the three databases' networks in one process, and the fit one against ORT as in 3.;
# 6. the F(4x4) database at 1 and 2 threads against ORT at 1 and 2, beside a probe of the
#    vCPU pair (../tvm-vcpu-pair-2026-11-27/threads_vs_ort.py, 6 blocks): does TVM lose more
#    than ORT in the VM's slow phases with one thread too, or only with two?
# About 55 minutes on the 2-core Zen 5. The direct database is restored from
# experiments/tvm-databases/pool-schedule/ where missing.
#
#   bash experiments/tvm-winograd-fit-zen5-2026-11-29/squeezenet.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-winograd-fit-zen5-2026-11-29
WORK=results/experiments/tvm-winograd-fit-zen5-2026-11-29   # git-ignored: the database
DIRECT=results/experiments/tvm-pool-schedule-2026-11-29/tuning
M=squeezenet1_1
RUNS=$HERE/runs/$M

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-transfer-multi-2026-11-29/sources.sh
. experiments/tvm-transfer-multi-2026-11-29/sources.sh   # transfer_sources

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M"
transfer_sources "$M"
restore_tvm_db "$M" "$DIRECT" experiments/tvm-databases/pool-schedule
# tune_winograd CONV2D TUNING_DIR RUNS: SqueezeNet 1.1 from nothing with --conv2d CONV2D
tune_winograd() {
    tune_from_nothing "$M" "$2" "$3" "$WORK/tune-$M-$1.log" --design-space multi-vector \
        --conv2d "$1" --no-transfer --out-channels pad-pair --allocation measured \
        --transfer-from "${from[@]}"
}

tune_winograd winograd "$WORK/tuning" "$RUNS" || exit 1
networks_in_one_process "$M" "$RUNS/networks" "$DIRECT" "$WORK/tuning"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning" "$WORK/ort-$M" "$RUNS"

FIT=$HERE/runs/$M-fit
mkdir -p "$WORK/ort-$M-fit"
tune_winograd winograd-fit "$WORK/tuning-fit" "$FIT" || exit 1
networks_in_one_process "$M" "$FIT/networks" "$DIRECT" "$WORK/tuning" "$WORK/tuning-fit"
[ -f "$FIT/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning-fit" "$WORK/ort-$M-fit" "$FIT"
[ -f "$RUNS/threads.json" ] || step "$PY" experiments/tvm-vcpu-pair-2026-11-27/threads_vs_ort.py \
    compare --model "$M" --tuning-dir "$WORK/tuning" --reps 6 --json "$RUNS/threads.json" 2>&1 \
    | grep -v 'Fast mode segfaults' | tee "$RUNS/threads.txt"
