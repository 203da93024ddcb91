#!/usr/bin/env bash
# Why do resnet152's tuned kernels run 1.5-2x their database best in the network? In one
# process: each top kernel in the network, alone, and the database's figure
# (kernel_vs_network.py); then the heaviest tasks' best records re-measured with
# MetaSchedule's own builder and runner (runner_remeasure.py); then 128 more trials for the
# 14x14 conv on a copy of the database (more_trials.py), its top 8 records re-measured, the
# network with its #3 record against the database best (rerank_ab.py), and the whole
# database re-ranked with `edgebench.tune --rerank` against the original, as networks
# (benchmarks/tvm_databases.py). The direct database of ../tvm-six-models-2026-11-25 must
# exist (its run.sh). About 40 minutes.
#
#   bash experiments/tvm-kernel-vs-network-2026-11-26/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
PY=${PY:-.venv/bin/python}
HERE=experiments/tvm-kernel-vs-network-2026-11-26
DB=${DB:-results/experiments/tvm-six-models-2026-11-25/tuning}
MODEL=${MODEL:-resnet152}
export PYTHONPATH=$PWD
mkdir -p "$HERE/runs"
grep -m1 "model name" /proc/cpuinfo > "$HERE/cpu.txt"
grep -o -w -m1 -E "avx512f|avx2" /proc/cpuinfo | sort -u | tr '\n' ' ' >> "$HERE/cpu.txt"
"$PY" "$HERE/kernel_vs_network.py" --model "$MODEL" --tuning-dir "$DB" --top 10 --rounds 8 \
    --json "$HERE/runs/$MODEL.json" 2>&1 | grep -v '^\[' > "$HERE/runs/$MODEL.txt"
"$PY" "$HERE/runner_remeasure.py" --model "$MODEL" --tuning-dir "$DB" \
    --tasks fused_conv2d16_add9_relu71 fused_conv2d15_add9_relu71 \
    fused_conv2d13_add10_add11_relu81 --json "$HERE/runs/$MODEL-runner.json" 2>&1 \
    | grep -v '^\[\|INFO' > "$HERE/runs/$MODEL-runner.txt"

WORK=${WORK:-results/experiments/tvm-kernel-vs-network-2026-11-26}     # git-ignored copies
"$PY" "$HERE/more_trials.py" --model "$MODEL" --from "$DB" --to "$WORK/tuning" \
    --task fused_conv2d16_add9_relu71 --extra 128 --json "$HERE/runs/$MODEL-more-trials.json" \
    > /dev/null
"$PY" "$HERE/runner_remeasure.py" --model "$MODEL" --tuning-dir "$WORK/tuning" \
    --tasks fused_conv2d16_add9_relu71 --top 8 --json "$HERE/runs/$MODEL-more-trials-rerank.json" \
    2>&1 | grep -v '^\[\|INFO' > "$HERE/runs/$MODEL-more-trials-rerank.txt"
# The rank below is the one the re-measure above found fastest on 2026-11-26.
"$PY" "$HERE/rerank_ab.py" --model "$MODEL" --tuning-dir "$WORK/tuning" \
    --pick fused_conv2d16_add9_relu71=3 --json "$HERE/runs/$MODEL-rerank-ab.json" 2>&1 \
    | grep -v '^\[' > "$HERE/runs/$MODEL-rerank-ab.txt"
# The feature itself on a copy of the untouched database, then both networks in one process.
slug=$(basename "$(dirname "$(find "$DB" -mindepth 2 -maxdepth 2 -type d -name "$MODEL-*" | head -1)")")
rm -rf "$WORK/rerank-tuning/$slug/$MODEL-"*
mkdir -p "$WORK/rerank-tuning/$slug"
cp -r "$DB/$slug/$MODEL-"* "$WORK/rerank-tuning/$slug/"
rm -rf "$WORK/rerank-tuning/$slug/$MODEL-"*/logs
"$PY" -m edgebench.tune --model "$MODEL" --tuning-dir "$WORK/rerank-tuning" --trials 0 --rerank \
    --no-progress --summary "$HERE/runs/$MODEL-rerank-tune.json" > "$HERE/runs/$MODEL-rerank-tune.log" 2>&1
"$PY" benchmarks/tvm_databases.py --model "$MODEL" --tuning-dirs "$DB" "$WORK/rerank-tuning" \
    --json "$HERE/runs/$MODEL-direct-vs-reranked.json" > "$HERE/runs/$MODEL-direct-vs-reranked.txt" 2>&1
# Both: the database with the 128 extra trials, re-ranked over its top 8, against the original.
rm -rf "$WORK/rerank8-tuning/$slug/$MODEL-"*
mkdir -p "$WORK/rerank8-tuning/$slug"
cp -r "$WORK/tuning/$slug/$MODEL-"* "$WORK/rerank8-tuning/$slug/"
rm -rf "$WORK/rerank8-tuning/$slug/$MODEL-"*/logs "$WORK/rerank8-tuning/$slug/$MODEL-"*/reranked
"$PY" -m edgebench.tune --model "$MODEL" --tuning-dir "$WORK/rerank8-tuning" --trials 0 --rerank 8 \
    --no-progress --summary "$HERE/runs/$MODEL-more-trials-rerank8-tune.json" \
    > "$HERE/runs/$MODEL-more-trials-rerank8-tune.log" 2>&1
"$PY" benchmarks/tvm_databases.py --model "$MODEL" --tuning-dirs "$DB" "$WORK/rerank8-tuning" \
    --json "$HERE/runs/$MODEL-direct-vs-more-trials-rerank8.json" \
    > "$HERE/runs/$MODEL-direct-vs-more-trials-rerank8.txt" 2>&1
