#!/usr/bin/env bash
# SqueezeNet 1.1 tuned with the defaults for new databases: channel concats moved into their
# consumers (--concat split) and the 1000-class conv padded to whole AVX-512 vectors
# (--out-channels pad, converters/tvm/cpu/pad_channels.py), on the Zen 4:
#   1. the classifier conv alone with 1000 and 1008 output channels, 128 trials each
#      (benchmarks/tvm_pad_channels_alone.py, about 2 min);
#   2. the model tuned from nothing at 512 trials (about 5 min on the 2-core Zen 4);
#   3. the database it replaced (concats and 1000 channels kept, data/tvm-databases/superseded/)
#      and this one built and timed in alternating rounds in one process
#      (benchmarks/tvm_databases.py);
#   4. lib.sh tvm_against_ort: TVM and ORT parity in one suite run; this one against ORT, in
#      processes of their own, alternated (benchmarks/tvm_vs_ort.py, 6 runs); its per-kernel
#      profile beside ORT's (benchmarks/tvm_profile.py).
# About 12 minutes.
#
#   bash experiments/tvm-pad-channels-2026-11-28/run.sh
#   bash experiments/tvm-pad-channels-2026-11-28/run.sh --dry-run   # the commands, run nothing
#
# A rerun keeps what is recorded (runs/head-alone.json, tune.json, kept-vs-new.json,
# vs-ort.json); a tune.json of another CPU stops it (tuned_for_this_cpu).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
HERE=experiments/tvm-pad-channels-2026-11-28
WORK=results/experiments/tvm-pad-channels-2026-11-28   # git-ignored: the databases
KEPT=$WORK/kept-1127
M=squeezenet1_1

start_experiment "$HERE"
[ "$DRY" = 1 ] || mkdir -p "$WORK"
restore_tvm_db "$M" "$KEPT" data/tvm-databases/superseded
[ -f "$HERE/runs/head-alone.json" ] ||
    step "$PY" benchmarks/tvm_pad_channels_alone.py --trials 128 --work "$WORK/head" \
        --json "$HERE/runs/head-alone.json" 2>&1 | grep -v -e 'Fast mode segfaults' -e '^\[' \
        -e 'Warning' -e 'meta_schedule' -e '\[DEBUG\]' -e '\[INFO\]' \
        | tee "$(sink "$HERE/runs/head-alone.txt")"
if [ -f "$HERE/runs/tune.json" ]; then
    tuned_for_this_cpu "$HERE/runs/tune.json" || exit 1
else
    step "$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning" \
        --no-reuse --no-progress --summary "$HERE/runs/tune.json" > "$(sink "$WORK/tune.log")" 2>&1
    if [ "$DRY" = 0 ]; then
        grep -v 'Fast mode segfaults' "$WORK/tune.log" > "$HERE/runs/tune.log"
        cp "$WORK"/tuning/*/"$M"-*/tuning.json "$HERE/runs/tuning.json"
    fi
fi
# this run's database, kept as the Zen 4 one tvm_best_db restores (a fresh checkout's rerun)
restore_tvm_db "$M" "$WORK/tuning" data/tvm-databases 'llvm-znver4-*'
[ -f "$HERE/runs/kept-vs-new.json" ] ||
    step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$KEPT" "$WORK/tuning" \
        --json "$HERE/runs/kept-vs-new.json" 2>&1 | grep -v 'Fast mode segfaults' \
        | tee "$(sink "$HERE/runs/kept-vs-new.txt")"
[ -f "$HERE/runs/vs-ort.json" ] ||
    tvm_against_ort "$M" "$WORK/tuning" "$WORK" "$HERE/runs" "${REPS:-6}"
