#!/usr/bin/env bash
# Issue 33, after run.sh: a second seed of each allocation. ResNet-152 tuned from nothing with
# --seed 1, --trials 512 --no-reuse --runner-caches cold, once with --allocation share and once
# with --allocation measured; then the four databases (seed 0: ../tvm-resnet152-zen4-2026-11-28/'s
# share + cold and run.sh's measured + cold; seed 1: these two) interleaved in one process
# (benchmarks/tvm_databases.py). The seed also seeds the random weights the session loads; the
# tasks' kernels do not depend on them, and the networks are all built with seed 0's. A rerun
# keeps the databases and the comparison. About 20 minutes on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-small-tasks-2026-11-28/seeds.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-small-tasks-2026-11-28
WORK=results/experiments/tvm-resnet152-small-tasks-2026-11-28   # git-ignored: the databases
PREV=results/experiments/tvm-resnet152-zen4-2026-11-28
M=resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
for d in "$PREV/cold" "$WORK/measured-cold"; do
    [ -d "$d" ] || { echo "no database in $d: run ../tvm-resnet152-zen4-2026-11-28/run.sh and run.sh"; exit 1; }
done
for rule in share measured; do
    name=$rule-cold-seed1
    [ -f "$HERE/runs/tune-$name.json" ] && continue
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --no-reuse --allocation "$rule" \
        --runner-caches cold --seed 1 --tuning-dir "$WORK/$name" --no-progress \
        --summary "$HERE/runs/tune-$name.json" > "$WORK/tune-$name.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$name.log" > "$HERE/runs/tune-$name.log"
done
networks_in_one_process "$M" "$HERE/runs/networks-seeds" "$PREV/cold" "$WORK/measured-cold" \
    "$WORK/share-cold-seed1" "$WORK/measured-cold-seed1"
