#!/usr/bin/env bash
# Issue 33: the first conv reading the model's NCHW input itself (--input-transpose conv,
# converters/tvm/input_transpose.py) instead of a transpose kernel before it, on the kept
# Zen 4 databases of the six study models. Per model, so that the two builds differ in the
# stem alone:
#   1. the kept database copied, and only the new stem task tuned, with the trials the kept
#      database spent on the old stem and the transpose together (so the same total);
#   2. the kept database and the copy built and timed in alternating rounds in one process
#      (benchmarks/tvm_databases.py);
#   3. tvm_against_ort (lib.sh) on the copy: parity in one suite run, then against ORT in
#      processes of their own, alternated (REPS runs, default 6), and its per-kernel profile.
# A rerun keeps steps 1 and 2 where their records exist and repeats step 3. About 8 minutes a
# model on the 2-core Zen 4 (VGG16 and Swin-T about 13).
#
#   bash experiments/tvm-input-conv-2026-11-28/run.sh
#   MODELS="efficientnet_b0" REPS=4 bash experiments/tvm-input-conv-2026-11-28/run.sh
#   TUNE_ONLY=1 bash experiments/tvm-input-conv-2026-11-28/run.sh     # step 1 alone (05:31)
#   ARMS=ort,tvm,tvm-nobind REPS=4 bash experiments/tvm-input-conv-2026-11-28/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-input-conv-2026-11-28
WORK=results/experiments/tvm-input-conv-2026-11-28   # git-ignored: the databases

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
for M in ${MODELS:-vgg16 mobilenetv2_100 swin_tiny_patch4_window7_224 squeezenet1_1 efficientnet_b0 resnet152}; do
    mkdir -p "$WORK/$M" "$HERE/runs/$M"
    kept=$(tvm_best_db "$M")
    src=$(find "$kept" -mindepth 2 -maxdepth 2 -type d -name "$M-*" -path "*znver4*" | head -1)
    [ -n "$src" ] || { echo "no Zen 4 database for $M under $kept"; exit 1; }
    dest="$WORK/$M/tuning/$(basename "$(dirname "$src")")"
    mkdir -p "$dest"
    [ -d "$dest/$(basename "$src")" ] || cp -r "$src" "$dest/"
    if grep -q '"input_transpose": "conv"' "$dest/$(basename "$src")/tuning.json"; then
        echo "$M: the copy's stem is tuned already"      # a rerun: keep its session's records
    else
        # the kept session's trials on the old stem (fused_conv2d_add*) and the transpose
        trials=$("$PY" experiments/tvm-input-conv-2026-11-28/stem_trials.py "$src")
        echo "$M: kept $src, stem + transpose trials $trials"
        step "$PY" -m edgebench.tune --model "$M" --trials "$trials" \
            --tuning-dir "$WORK/$M/tuning" --input-transpose conv --only-tasks fused_conv2d_add \
            --no-reuse --no-progress --summary "$HERE/runs/$M/tune.json" > "$WORK/$M/tune.log" 2>&1
        grep -v 'Fast mode segfaults' "$WORK/$M/tune.log" > "$HERE/runs/$M/tune.log"
        cp "$dest"/"$M"-*/tuning.json "$HERE/runs/$M/tuning.json"
    fi
    [ "${TUNE_ONLY:-0}" = 1 ] && continue           # the stems alone, to look at them first
    [ -f "$HERE/runs/$M/kept-vs-conv.json" ] ||
        step "$PY" benchmarks/tvm_databases.py --model "$M" --tuning-dirs "$kept" \
            "$WORK/$M/tuning" --json "$HERE/runs/$M/kept-vs-conv.json" 2>&1 \
            | grep -v 'Fast mode segfaults' | tee "$HERE/runs/$M/kept-vs-conv.txt"
    tvm_against_ort "$M" "$WORK/$M/tuning" "$WORK/$M" "$HERE/runs/$M" "${REPS:-6}"
done
