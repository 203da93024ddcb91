#!/usr/bin/env bash
# Issue 33, after run.sh and streamed.py: ResNet-152 tuned with the streamed runner. From
# nothing, edgebench.tune --trials 512 --no-reuse --allocation measured --runner-caches
# streamed (seed 0; run.sh of ../tvm-resnet152-small-tasks-2026-11-28/ with streamed in place
# of cold). Then:
#   1. its network and the cold one's, interleaved in one process (benchmarks/tvm_databases.py);
#   2. kernels_vs_ort.py --ceilings on it (every kernel beside ORT's node, the FMA ceiling);
#   3. it against ORT in processes of their own, alternated (pool_vs_ort.py, REPS per arm,
#      default 4);
#   4. streamed.py on it (its four heaviest kernels warm, flushed, streamed, in the network).
# Needs ../tvm-resnet152-small-tasks-2026-11-28/run.sh's database. A rerun keeps the database
# and the records it has. SEED (default 0) tunes another seed into its own folder. About
# 25 minutes on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-roofline-2026-11-28/tune.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-roofline-2026-11-28
WORK=results/experiments/tvm-resnet152-roofline-2026-11-28   # git-ignored: the databases
SMALL=results/experiments/tvm-resnet152-small-tasks-2026-11-28
M=resnet152
SEED=${SEED:-0}
NAME=measured-streamed$([ "$SEED" = 0 ] || echo "-seed$SEED")
COLD=$SMALL/measured-cold$([ "$SEED" = 0 ] || echo "-seed$SEED")

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
[ -d "$COLD" ] || { echo "no database in $COLD: run ../tvm-resnet152-small-tasks-2026-11-28/run.sh (seeds.sh for seed 1)"; exit 1; }
[ -f "$HERE/runs/tune-$NAME.json" ] || {
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --no-reuse --allocation measured \
        --runner-caches streamed --seed "$SEED" --tuning-dir "$WORK/$NAME" --no-progress \
        --summary "$HERE/runs/tune-$NAME.json" > "$WORK/tune-$NAME.log" 2>&1
    grep -v 'Fast mode segfaults' "$WORK/tune-$NAME.log" > "$HERE/runs/tune-$NAME.log"
}
networks_in_one_process "$M" "$HERE/runs/networks-$NAME" "$COLD" "$WORK/$NAME"
kernels_beside_ort "$M" "$WORK/$NAME" "$WORK" "$HERE/runs" "$NAME" --ceilings "$WORK/bin"
step "$PY" experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$M" \
    --tuning-dir "$WORK/$NAME" --arms ort,tvm --reps "${REPS:-4}" \
    --json "$HERE/runs/vs-ort-$NAME.json" 2>&1 | tee "$HERE/runs/vs-ort-$NAME.txt"
[ -f "$HERE/runs/streamed-$NAME.json" ] ||
    step "$PY" "$HERE/streamed.py" --model "$M" --tuning-dir "$WORK/$NAME" \
        --json "$HERE/runs/streamed-$NAME.json" 2> "$WORK/streamed-$NAME.log" \
        | tee "$HERE/runs/streamed-$NAME.txt"
