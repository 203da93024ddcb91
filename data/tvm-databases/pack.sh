#!/usr/bin/env bash
# Keep a model's TVM tuning database in the repository: TUNING_DIR/<target>/<model>-CxHxW/
# (records, workloads, tuning.json; not the per-task logs) as
# ROOT/<target>/<model>-CxHxW.tar.xz, ROOT by default data/tvm-databases (the archives
# experiments/lib.sh's tvm_best_db restores); a set of its own, e.g. data/tvm-databases/NAME,
# is restored by restore_tvm_db MODEL DIR ROOT. Add the archive's row to README.md here.
#
#   bash data/tvm-databases/pack.sh MODEL TUNING_DIR [ROOT]
#   bash data/tvm-databases/pack.sh resnet152 results/experiments/NAME/tuning data/tvm-databases/NAME
set -euo pipefail
case "${1:-}" in
    -h | --help | "") sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit $? ;;
esac
cd "$(dirname "$0")/../.."                          # the repository root
model=$1 tuning_dir=$2 root=${3:-data/tvm-databases}
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
