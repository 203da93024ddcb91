#!/usr/bin/env bash
# Keep a model's TVM tuning database in the repository: TUNING_DIR/<target>/<model>-CxHxW/
# (records, workloads, tuning.json, re-ranked picks if any; not the per-task logs) as
# experiments/tvm-databases/<target>/<model>-CxHxW.tar.xz. experiments/lib.sh's tvm_best_db
# restores it where the git-ignored copy is missing.
#
# ROOT (optional, default experiments/tvm-databases) keeps archives apart from the ones
# tvm_best_db restores: restore_tvm_db MODEL DIR ROOT restores from it.
#
#   bash experiments/tvm-databases/pack.sh mobilenetv2_100 results/experiments/tvm-six-models-2026-11-25/tuning
#   bash experiments/tvm-databases/pack.sh resnet152 results/experiments/tvm-transfer-multi-2026-11-29/tuning \
#       experiments/tvm-databases/multi-vector-transfer
set -euo pipefail
cd "$(dirname "$0")/../.."                          # the repository root
model=$1 tuning_dir=$2 root=${3:-experiments/tvm-databases}
found=0
for db in "$tuning_dir"/*/"$model"-*/; do
    [ -f "$db/database_tuning_record.json" ] || continue
    target=$(basename "$(dirname "$db")") name=$(basename "$db")
    mkdir -p "$root/$target"
    tar -C "$tuning_dir" --exclude="$target/$name/logs" \
        --sort=name --mtime=@0 --owner=0 --group=0 -cf - "$target/$name" \
        | xz -9 > "$root/$target/$name.tar.xz"
    echo "$root/$target/$name.tar.xz: $(wc -l < "$db/database_tuning_record.json") records"
    found=1
done
[ "$found" = 1 ] || { echo "no database for $model under $tuning_dir" >&2; exit 1; }
