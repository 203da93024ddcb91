#!/usr/bin/env bash
# Issue 33: ResNet-152's one-call tasks. In the best database so far (the kept one re-ranked
# cold, ../tvm-resnet152-zen4-2026-11-28/; --allocation share), 18 of the 30 workloads hold
# 5 records or fewer, and three one-call tasks ran 1.2-1.7x ORT's node in the network. Does
# --allocation measured (a first round of half the even batch for every task, then caps by
# measured time) with the cold runner close that gap at 512 trials?
#   1. ResNet-152 tuned from nothing: edgebench.tune --trials 512 --no-reuse
#      --allocation measured --runner-caches cold (seed 0);
#   2. the kept database re-ranked cold, the share + cold database tuned the same way on
#      2026-11-28, and the new one, interleaved in one process (benchmarks/tvm_databases.py);
#   3. kernels_vs_ort.py on the new database (every kernel beside ORT's node);
#   4. the new database against ORT in processes of their own, alternated (pool_vs_ort.py,
#      REPS runs per arm, default 4), and its parity against PyTorch in a suite run.
# Needs ../tvm-resnet152-zen4-2026-11-28/run.sh and rerank.sh first (their databases). A
# rerun keeps the database and repeats the measurements. About 35 minutes on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-small-tasks-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-small-tasks-2026-11-28
WORK=results/experiments/tvm-resnet152-small-tasks-2026-11-28   # git-ignored: the database
PREV=results/experiments/tvm-resnet152-zen4-2026-11-28
M=resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
for d in "$PREV/kept-rerank-cold" "$PREV/cold"; do
    [ -d "$d" ] || { echo "no database in $d: run ../tvm-resnet152-zen4-2026-11-28/run.sh and rerank.sh"; exit 1; }
done
[ -f "$HERE/runs/tune-measured-cold.json" ] || {
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --no-reuse --allocation measured \
        --runner-caches cold --tuning-dir "$WORK/measured-cold" --no-progress \
        --summary "$HERE/runs/tune-measured-cold.json" > "$WORK/tune-measured-cold.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-measured-cold.log" > "$HERE/runs/tune-measured-cold.log"
}
networks_in_one_process "$M" "$HERE/runs/networks" "$PREV/kept-rerank-cold" "$PREV/cold" \
    "$WORK/measured-cold"
kernels_then_ort "$M" "$WORK/measured-cold" "$WORK" "$HERE/runs" measured-cold
step "$PY" -m edgebench.full --models "$M" --variants tvm onnxruntime --tasks parity \
    --tuning-dir "$WORK/measured-cold" --out "$WORK/parity" --resume > "$WORK/parity.log" 2>&1
cp "$WORK/parity/results.jsonl" "$HERE/runs/parity-measured-cold.jsonl"
