#!/usr/bin/env bash
# Issue 33: NHWC spatial means as a GEMV (passes.spatial_mean_as_matmul, --spatial-mean).
# 1. mean_forms.py: each of EfficientNet-B0's spatial means tuned in both forms (16 trials per
#    task) and timed beside ORT's ReduceMean, in one process (about 15 minutes);
# 2. EfficientNet-B0's kept database (reduction form, 514 trials) copied, and its GEMV tasks
#    (the 5 means of 28x28 and up) tuned into the copy (--spatial-mean matmul --only-tasks
#    spatial_mean, 16 trials a task);
#    the two networks interleaved in one process (benchmarks/tvm_databases.py), each against
#    ORT alternated in processes of their own (pool_vs_ort.py), and the new one's profile
#    beside ORT's (benchmarks/tvm_profile.py). About 25 minutes.
#
#   bash experiments/tvm-spatial-mean-2026-11-27/run.sh
#   PARTS=network bash experiments/tvm-spatial-mean-2026-11-27/run.sh    # part 2 only
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-spatial-mean-2026-11-27
WORK=results/experiments/tvm-spatial-mean-2026-11-27     # git-ignored
M=efficientnet_b0
PARTS=${PARTS:-"forms network"}
COMPARE=experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
if [[ " $PARTS " == *" forms "* ]]; then
    step "$PY" "$HERE/mean_forms.py" --work "$WORK/forms" --json "$HERE/runs/mean_forms.json" \
        2>&1 | grep --line-buffered -v -e "XGB" -e "\[INFO\]" | tee "$HERE/runs/mean_forms.txt"
fi
[[ " $PARTS " == *" network "* ]] || exit 0

old=$(tvm_best_db "$M")                       # the reduction form, as tuned
new=$WORK/tuning
if [ ! -d "$new" ]; then
    restore_tvm_db "$M" "$new"
fi
# The copy's 514 records stay; only the GEMV tasks (no records yet) are tuned.
step "$PY" -m edgebench.tune --model "$M" --tuning-dir "$new" --spatial-mean matmul \
    --only-tasks spatial_mean --trials 80 --no-reuse --no-progress \
    --summary "$HERE/runs/tune-$M-gemv.json" > "$HERE/runs/tune-$M-gemv.log" 2>&1
step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$old" "$new" \
    --json "$HERE/runs/$M-networks.json" 2>&1 | tee "$HERE/runs/$M-networks.txt"
for d in "$old" "$new"; do
    name=$([ "$d" = "$new" ] && echo gemv || echo reduce)
    step "$PY" "$COMPARE" prepare --model "$M" --tuning-dir "$d"
    step "$PY" "$COMPARE" compare --model "$M" --tuning-dir "$d" --arms ort,tvm --reps 4 \
        --json "$HERE/runs/$M-$name-vs-ort.json" 2>&1 | tee "$HERE/runs/$M-$name-vs-ort.txt"
done
for d in "$new" "$old"; do
    name=$([ "$d" = "$new" ] && echo gemv || echo reduce)
    step "$PY" benchmarks/tvm_profile.py --model "$M" --tuning-dir "$d" \
        --json "$HERE/runs/$M-$name-profile.json" > "$HERE/runs/$M-$name-profile.txt" 2>&1
done
