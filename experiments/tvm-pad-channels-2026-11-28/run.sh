#!/usr/bin/env bash
# Issue 33: SqueezeNet 1.1 tuned with today's defaults for new databases: channel concats moved
# into their consumers (--concat split, ../tvm-concat-split-2026-11-28/) and the 1000-class
# conv padded to whole AVX-512 vectors (--out-channels pad, converters/tvm/pad_channels.py).
#   1. the classifier conv alone with 1000 and 1008 output channels, 128 trials each
#      (head_alone.py, about 2 min);
#   2. the model tuned from nothing at 512 trials (about 5 min on the 2-core Zen 4);
#   3. the kept Zen 4 database (concats and 1000 channels kept) and this one (split + pad)
#      built and timed in alternating rounds in one process (benchmarks/tvm_databases.py);
#   4. tvm_against_ort (lib.sh): TVM and ORT parity in one suite run; this one against ORT,
#      in processes of their own, alternated (pool_vs_ort.py, 6 runs); its per-kernel profile
#      beside ORT's (benchmarks/tvm_profile.py).
# About 12 minutes (the 02:29 run: 10 minutes, its head_alone databases already tuned).
#
#   bash experiments/tvm-pad-channels-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-pad-channels-2026-11-28
WORK=results/experiments/tvm-pad-channels-2026-11-28   # git-ignored: the databases
KEPT=results/experiments/tvm-measured-allocation-2026-11-27/uniform
M=squeezenet1_1

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK" "$HERE/runs"
restore_tvm_db "$M" "$KEPT" experiments/tvm-databases/superseded
step "$PY" "$HERE/head_alone.py" --trials 128 --work "$WORK/head" \
    --json "$HERE/runs/head-alone.json" 2>&1 | grep -v -e 'Fast mode segfaults' -e '^\[' \
    -e 'Warning' -e 'meta_schedule' -e '\[DEBUG\]' -e '\[INFO\]' | tee "$HERE/runs/head-alone.txt"
step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning" --no-reuse \
    --no-progress --summary "$HERE/runs/tune.json" > "$WORK/tune.log" 2>&1
grep -v 'Fast mode segfaults' "$WORK/tune.log" > "$HERE/runs/tune.log"
cp "$WORK"/tuning/*/"$M"-*/tuning.json "$HERE/runs/tuning.json"
step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$KEPT" "$WORK/tuning" \
    --json "$HERE/runs/kept-vs-new.json" 2>&1 | grep -v 'Fast mode segfaults' \
    | tee "$HERE/runs/kept-vs-new.txt"
tvm_against_ort "$M" "$WORK/tuning" "$WORK" "$HERE/runs" "${REPS:-6}"
