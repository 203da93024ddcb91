#!/usr/bin/env bash
# Issue 33, after run.sh: the kept ResNet-152 database's top records re-measured with the
# weights cold (edgebench.tune --trials 0 --rerank K --runner-caches cold), against the same
# re-rank warm, on two copies of it; no new trials. Then the kept, warm-re-ranked and
# cold-re-ranked networks interleaved in one process (benchmarks/tvm_databases.py),
# kernels_vs_ort.py on the cold-re-ranked one, and it against ORT in processes of their own
# (pool_vs_ort.py, REPS runs per arm, default 4). About 25 minutes on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-zen4-2026-11-28/rerank.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-zen4-2026-11-28
WORK=results/experiments/tvm-resnet152-zen4-2026-11-28   # git-ignored: the databases
M=resnet152
K=${K:-8}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
kept=results/experiments/tvm-input-conv-2026-11-28/$M/tuning
for caches in warm cold; do
    [ -f "$HERE/runs/rerank-$caches.json" ] ||
        rerank_copy "$M" "$kept" "$WORK/kept-rerank-$caches" "$caches" "$HERE/runs/rerank-$caches" "$K"
done
[ -f "$HERE/runs/kept-reranked.json" ] ||
    step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$kept" \
        "$WORK/kept-rerank-warm" "$WORK/kept-rerank-cold" --json "$HERE/runs/kept-reranked.json" 2>&1 \
        | grep -v 'Fast mode segfaults' | tee "$HERE/runs/kept-reranked.txt"
[ -f "$HERE/runs/kernels-rerank-cold.json" ] ||
    step "$PY" "$HERE/kernels_vs_ort.py" --model "$M" --tuning-dir "$WORK/kept-rerank-cold" \
        --json "$HERE/runs/kernels-rerank-cold.json" 2> "$WORK/kernels-rerank-cold.log" \
        | tee "$HERE/runs/kernels-rerank-cold.txt"
step "$PY" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$M" \
    --tuning-dir "$WORK/kept-rerank-cold" --arms ort,tvm --reps "${REPS:-4}" \
    --json "$HERE/runs/vs-ort-rerank-cold.json" 2>&1 | tee "$HERE/runs/vs-ort-rerank-cold.txt"
