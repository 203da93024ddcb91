#!/usr/bin/env bash
# Issue 33: where ResNet-152's last 5 % behind ORT goes on the Zen 4, and whether tuning with
# the weights cold (--runner-caches cold: every argument but the data flushed from the caches
# before each measured call, as a network's kernel finds them) closes it.
#   1. kernels_vs_ort.py on the kept database (../tvm-input-conv-2026-11-28/'s copy): every
#      kernel alone warm (as MetaSchedule measures), alone cold, and in the network, beside
#      ORT's node of the same shape and both networks' walls, in one process;
#   2. ResNet-152 tuned from nothing twice, same command and seed, warm then cold runner
#      (edgebench.tune --trials 512 --no-reuse --allocation share, its kept flags);
#   3. kept, warm and cold networks interleaved in one process (benchmarks/tvm_databases.py);
#   4. kernels_vs_ort.py on the cold database;
#   5. each new database against ORT in processes of their own, alternated (pool_vs_ort.py,
#      REPS runs per arm, default 4), and parity of the cold one in a suite run.
# A rerun keeps the databases and repeats the measurements. About 45 minutes on the 2-core
# Zen 4.
#
#   bash experiments/tvm-resnet152-zen4-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-zen4-2026-11-28
WORK=results/experiments/tvm-resnet152-zen4-2026-11-28   # git-ignored: the databases
M=resnet152

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
kept=results/experiments/tvm-input-conv-2026-11-28/$M/tuning
[ -d "$kept" ] || { echo "no kept database in $kept: run ../tvm-input-conv-2026-11-28/run.sh"; exit 1; }
kernels() {     # kernels LABEL TUNING_DIR
    [ -f "$HERE/runs/kernels-$1.json" ] && return 0
    step "$PY" "$HERE/kernels_vs_ort.py" --model "$M" --tuning-dir "$2" \
        --json "$HERE/runs/kernels-$1.json" 2> "$WORK/kernels-$1.log" | tee "$HERE/runs/kernels-$1.txt"
}
kernels kept "$kept"
for caches in warm cold; do
    [ -f "$HERE/runs/tune-$caches.json" ] && continue
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --no-reuse --allocation share \
        --runner-caches "$caches" --tuning-dir "$WORK/$caches" --no-progress \
        --summary "$HERE/runs/tune-$caches.json" > "$WORK/tune-$caches.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$caches.log" > "$HERE/runs/tune-$caches.log"
done
[ -f "$HERE/runs/kept-warm-cold.json" ] ||
    step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$kept" "$WORK/warm" \
        "$WORK/cold" --json "$HERE/runs/kept-warm-cold.json" 2>&1 \
        | grep -v 'Fast mode segfaults' | tee "$HERE/runs/kept-warm-cold.txt"
kernels cold "$WORK/cold"
for caches in cold warm; do
    step "$PY" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$M" \
        --tuning-dir "$WORK/$caches" --arms ort,tvm --reps "${REPS:-4}" \
        --json "$HERE/runs/vs-ort-$caches.json" 2>&1 | tee "$HERE/runs/vs-ort-$caches.txt"
done
step "$PY" -m edgebench.full --models "$M" --variants tvm onnxruntime --tasks parity \
    --tuning-dir "$WORK/cold" --out "$WORK/parity" --resume > "$WORK/parity.log" 2>&1
cp "$WORK/parity/results.jsonl" "$HERE/runs/parity-cold.jsonl"
