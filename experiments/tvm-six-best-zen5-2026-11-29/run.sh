#!/usr/bin/env bash
# Issue 33 on the Zen 5: the six study models' best databases so far against ORT, one after
# the other in one sitting, so that the six ratios come from one stretch of the VM's day.
# Each best database is tuned from nothing at 512 trials (docs/tvm.md, "Best so far on the Zen
# 5"); each is measured as before: ORT and TVM alternated in processes of their own, 4 runs
# each (pool_vs_ort.py compare). Parity was checked where each database was made. About 20
# minutes on the 2-core Zen 5. The databases are restored from experiments/tvm-databases/
# where missing.
#
#   bash experiments/tvm-six-best-zen5-2026-11-29/run.sh
#   MODELS="resnet152 squeezenet1_1" bash experiments/tvm-six-best-zen5-2026-11-29/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-six-best-zen5-2026-11-29
MODELS=${MODELS:-"squeezenet1_1 resnet152 mobilenetv2_100 efficientnet_b0 swin_tiny_patch4_window7_224 vgg16"}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

# The best database of each model on the Zen 5, and the archive it is restored from.
best_db() {
    local dir root
    case $1 in
        squeezenet1_1) dir=results/experiments/tvm-pool-schedule-2026-11-29/tuning
                       root=experiments/tvm-databases/pool-schedule ;;
        resnet152) dir=results/experiments/tvm-transfer-multi-2026-11-29/tuning
                   root=experiments/tvm-databases/multi-vector-transfer ;;
        mobilenetv2_100) dir=results/experiments/tvm-multi-vector-2026-11-29/multi
                         root=experiments/tvm-databases/multi-vector ;;
        # the kept Zen 5 databases of ../tvm-six-models-zen5-2026-11-29/
        *) tvm_best_db "$1"; return ;;
    esac
    restore_tvm_db "$1" "$dir" "$root"
    echo "$dir"
}

start_experiment "$HERE"
for m in $MODELS; do
    runs=$HERE/runs/$m
    mkdir -p "$runs"
    db=$(best_db "$m")
    echo "$db" > "$runs/database.txt"
    [ -f "$runs/vs-ort.json" ] || step "$PY" \
        experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$m" \
        --tuning-dir "$db" --arms ort,tvm --reps 4 --json "$runs/vs-ort.json" 2>&1 \
        | grep -v 'Fast mode segfaults' | tee "$runs/vs-ort.txt"
done
