#!/usr/bin/env bash
# Issue 33, after run.sh: is ResNet-152's gap at 512 trials a budget gap? A copy of run.sh's
# database (--allocation measured --runner-caches cold, 514 trials) resumed to 1024 trials
# with the same flags, then the two networks interleaved in one process
# (benchmarks/tvm_databases.py), kernels_vs_ort.py on the resumed one, and it against ORT in
# processes of their own (pool_vs_ort.py, REPS runs per arm, default 4). A rerun keeps the
# resumed database and repeats the measurements. About 25 minutes on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-small-tasks-2026-11-28/budget.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-small-tasks-2026-11-28
WORK=results/experiments/tvm-resnet152-small-tasks-2026-11-28   # git-ignored: the databases
M=resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
[ -d "$WORK/measured-cold" ] || { echo "no database in $WORK/measured-cold: run run.sh first"; exit 1; }
[ -f "$HERE/runs/tune-measured-cold-1024.json" ] || {
    rm -rf "$WORK/measured-cold-1024" && cp -r "$WORK/measured-cold" "$WORK/measured-cold-1024"
    step "$PY" -m edgebench.tune --model "$M" --trials 1024 --no-reuse --allocation measured \
        --runner-caches cold --tuning-dir "$WORK/measured-cold-1024" --no-progress \
        --summary "$HERE/runs/tune-measured-cold-1024.json" > "$WORK/tune-measured-cold-1024.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-measured-cold-1024.log" \
        > "$HERE/runs/tune-measured-cold-1024.log"
}
networks_in_one_process "$M" "$HERE/runs/networks-1024" "$WORK/measured-cold" \
    "$WORK/measured-cold-1024"
kernels_then_ort "$M" "$WORK/measured-cold-1024" "$WORK" "$HERE/runs" measured-cold-1024
