#!/usr/bin/env bash
# Issue 33 on the Zen 5: SqueezeNet 1.1 tuned with its candidates measured on cold caches.
# With the pool sketch (../tvm-pool-schedule-2026-11-29/) SqueezeNet 1.1 is at 1.026x ORT's
# p50, its kernels level with ORT's warm, but losing more of their speed in the network
# (kernels.txt there: 1.681 ms warm, 2.089 in the network). --runner-caches cold measures
# each candidate after flushing its arguments from the caches, as ResNet-152's flags do since
# the Zen 4, so the tuner prefers kernels that run well on operands fresh from memory.
# 1. SqueezeNet 1.1 from nothing at 512 trials with the pool experiment's command plus
#    --runner-caches cold;
# 2. its network beside the pool experiment's database, in one process;
# 3. against ORT: parity, 4 alternated runs, a per-kernel profile (tvm_against_ort).
# About 20 minutes on the 2-core Zen 5. The pool experiment's database is restored from
# ../tvm-databases/pool-schedule/ where missing.
#
#   bash experiments/tvm-cold-squeezenet-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-cold-squeezenet-2026-11-29
WORK=results/experiments/tvm-cold-squeezenet-2026-11-29    # git-ignored: the database
POOL=results/experiments/tvm-pool-schedule-2026-11-29/tuning
M=squeezenet1_1
RUNS=$HERE/runs/$M

# shellcheck source=experiments/lib.sh
. experiments/lib.sh
# shellcheck source=experiments/tvm-transfer-multi-2026-11-29/sources.sh
. experiments/tvm-transfer-multi-2026-11-29/sources.sh   # transfer_sources

start_experiment "$HERE"
mkdir -p "$WORK" "$RUNS" "$WORK/ort-$M"
transfer_sources "$M"
restore_tvm_db "$M" "$POOL" experiments/tvm-databases/pool-schedule
if [ ! -f "$RUNS/tune.json" ]; then
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning" \
        --no-reuse --design-space multi-vector \
        --no-transfer --out-channels pad-pair --allocation measured --runner-caches cold \
        --transfer-from "${from[@]}" --no-progress --summary "$RUNS/tune.json" \
        > "$WORK/tune-$M.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$M.log" > "$RUNS/tune.log"
fi
networks_in_one_process "$M" "$RUNS/networks" "$POOL" "$WORK/tuning"
[ -f "$RUNS/vs-ort.json" ] || tvm_against_ort "$M" "$WORK/tuning" "$WORK/ort-$M" "$RUNS"

# 4. Again, later (the first pass ran in a slow phase of the VM): the two networks in one
#    process, then each database against ORT, back to back (pool experiment's first).
AGAIN=$RUNS/again
mkdir -p "$AGAIN"
networks_in_one_process "$M" "$AGAIN/networks" "$POOL" "$WORK/tuning"
for arm in pool:"$POOL" cold:"$WORK/tuning"; do
    [ -f "$AGAIN/vs-ort-${arm%%:*}.json" ] || step "$PY" \
        experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$M" \
        --tuning-dir "${arm#*:}" --arms ort,tvm --reps 4 --json "$AGAIN/vs-ort-${arm%%:*}.json" \
        2>&1 | tee "$AGAIN/vs-ort-${arm%%:*}.txt"
done
