#!/usr/bin/env bash
# The re-tuned mobilenetv2_100 database re-ranked (edgebench.tune --rerank 4, on a copy), then
# both networks interleaved in one process (benchmarks/tvm_databases.py, 8 rounds). About
# 5 + 2 min on 2 cores. Run after run.sh (it needs the database tvm_best_db gives).
#
#   bash experiments/tvm-threadpool-vs-ort-2026-11-27/rerank.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-threadpool-vs-ort-2026-11-27
WORK=results/experiments/tvm-threadpool-vs-ort-2026-11-27/rerank     # git-ignored

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
src=$(tvm_best_db mobilenetv2_100)
rm -rf "$WORK" && mkdir -p "$HERE/runs/rerank"
# The copy: mobilenetv2_100's database under each target folder, without its logs.
for d in "$src"/*/mobilenetv2_100-*/; do
    t=$WORK/tuning/$(basename "$(dirname "$d")")
    mkdir -p "$t" && cp -r "$d" "$t/" && rm -rf "$t/$(basename "$d")/logs"
done
step "$PY" -m edgebench.tune --model mobilenetv2_100 --trials 0 --rerank 4 --tuning-dir "$WORK/tuning" \
    --no-progress --summary "$HERE/runs/rerank/rerank.json" > "$HERE/runs/rerank/rerank.log" 2>&1
step "$PY" benchmarks/tvm_databases.py --model mobilenetv2_100 --tuning-dirs "$src" "$WORK/tuning" \
    --rounds 8 --json "$HERE/runs/rerank/databases.json" 2>&1 | tee "$HERE/runs/rerank/databases.txt"
