#!/usr/bin/env bash
# Did splitting the TVM package (its core, converters/tvm/cpu/, the lowering registry) change
# what a user gets? Tuned TVM's batch-1 p50 against ONNX Runtime's, and TVM's parity, on
# MobileNetV2 and SqueezeNet 1.1, with the code before the split (BEFORE) and after it (AFTER),
# each from a git worktree of its own, by the plain commands only:
#
#   python -m edgebench.tune --model M --trials 512          (recipe, reuse, transfer as they default)
#   python -m edgebench.full --models M --variants tvm onnxruntime --tasks parity latency
#
# The VM's speed drifts by tens of percent within minutes, so the arms alternate (ABBA):
# tuning runs before/after for MobileNetV2, after/before for SqueezeNet, and the measuring
# runs A B B A per model, twice (BLOCKS). The figure is TVM's p50 over ORT's within one run
# (tables.py).
#
#   bash experiments/tvm-package-split/run.sh              # ~50 min on 2 cores
#   bash experiments/tvm-package-split/run.sh --dry-run    # the commands, run nothing
#   BEFORE=0869221 AFTER=HEAD MODELS="squeezenet1_1" bash experiments/tvm-package-split/run.sh
#
# A rerun keeps what is recorded (runs/<arm>-<round>/<model>/results.jsonl, runs/tune-*.json).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                   # the repository root
case "${1:-}" in
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --dry-run) DRY=1 ;;
    "") DRY=0 ;;
    *) echo "usage: $0 [--dry-run | --help]" >&2; exit 2 ;;
esac
HERE=experiments/tvm-package-split
WORK=$PWD/results/experiments/tvm-package-split      # git-ignored: worktrees, tuning dirs, caches
BEFORE=${BEFORE:-0869221} AFTER=${AFTER:-HEAD}
MODELS=${MODELS:-"mobilenetv2_100 squeezenet1_1"}
BLOCKS=${BLOCKS:-2}                                   # ABBA blocks of measuring runs per model
PY=$PWD/.venv/bin/python
exec 3>&1

run() {                                               # ARM CMD...: CMD in ARM's worktree
    local arm=$1; shift
    echo "+ [$arm] $*" >&3                          # fd 3: the terminal, not the log
    [ "$DRY" = 1 ] && return 0
    (cd "$WORK/$arm" && PYTHONPATH=$WORK/$arm "$PY" "$@")
}

log() { if [ "$DRY" = 1 ]; then echo /dev/null; else echo "$WORK/$1.log"; fi; }

tune() {                                              # ARM MODEL
    local out=$HERE/runs/tune-$1-$2.json
    [ "$DRY" = 0 ] && [ -f "$out" ] && return 0
    run "$1" -m edgebench.tune --model "$2" --trials 512 --tuning-dir "$WORK/$1/tuning" \
        --no-progress --summary "$PWD/$out" > "$(log "tune-$1-$2")" 2>&1
}

measure() {                                           # ARM ROUND MODEL
    local kept=$HERE/runs/$1-$2/$3
    [ "$DRY" = 0 ] && [ -f "$kept/results.jsonl" ] && return 0
    run "$1" -m edgebench.full --models "$3" --variants tvm onnxruntime --tasks parity latency \
        --tuning-dir "$WORK/$1/tuning" --out "$WORK/runs/$1-$2-$3" > "$(log "full-$1-$2-$3")" 2>&1
    [ "$DRY" = 1 ] && return 0
    mkdir -p "$kept" && cp "$WORK/runs/$1-$2-$3/results.jsonl" "$kept/"   # the cells; run.json not kept (file budget)
}

if [ "$DRY" = 0 ]; then
    mkdir -p "$WORK/runs" "$HERE/runs"
    for arm in before after; do
        rev=$BEFORE; [ "$arm" = after ] && rev=$AFTER
        [ -d "$WORK/$arm" ] || git worktree add --detach "$WORK/$arm" "$rev" >/dev/null || exit 1
        echo "$arm: $(git -C "$WORK/$arm" rev-parse HEAD)" >&3
    done
    {
        grep -m1 -E 'model name' /proc/cpuinfo
        grep -m1 -E '^cpu family\s' /proc/cpuinfo
        grep -m1 -E '^model\s' /proc/cpuinfo
        if grep -q -m1 avx512_vnni /proc/cpuinfo; then echo "vectors: AVX-512 with VNNI"
        else echo "vectors: AVX2"; fi
        grep -c -E '^processor' /proc/cpuinfo | sed 's/^/vCPUs: /'
    } > "$HERE/cpu.txt"
fi
first=before second=after
for m in $MODELS; do                                   # tuning: A B, then B A for the next model
    tune $first "$m" && tune $second "$m"
    t=$first first=$second second=$t
done
for m in $MODELS; do                                   # measuring: A B B A, BLOCKS times
    for k in $(seq 1 "$BLOCKS"); do
        a=$((2 * k - 1)) b=$((2 * k))
        measure before $a "$m"; measure after $a "$m"; measure after $b "$m"; measure before $b "$m"
    done
done
[ "$DRY" = 1 ] || "$PY" "$HERE/tables.py" "$HERE/runs" | tee "$HERE/summary.md"
