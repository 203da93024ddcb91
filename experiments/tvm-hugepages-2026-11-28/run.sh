#!/usr/bin/env bash
# Issue 33: ResNet-152's TVM network and ORT session with the weights on 4 KiB pages and on
# 2 MiB pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1: glibc madvises its mmap-ed memory, the
# kernel's THP being in madvise mode here). walls.py in processes alternated off, on, on, off
# (ABBA), REPS times (default 2); each process times both runtimes in alternated rounds.
# The database is ../tvm-resnet152-small-tasks-2026-11-28/'s measured + cold one (512 trials;
# git-ignored, from that experiment's run.sh). About 90 s a process on the 2-core Zen 4.
#
#   bash experiments/tvm-hugepages-2026-11-28/run.sh [REPS]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-hugepages-2026-11-28
DB=${DB:-results/experiments/tvm-resnet152-small-tasks-2026-11-28/measured-cold}
LABEL=${LABEL:-measured-cold}
REPS=${1:-2}

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
[ -d "$DB" ] || { echo "no database in $DB"; exit 1; }
cat /sys/kernel/mm/transparent_hugepage/enabled > "$HERE/runs/thp.txt"
i=0
for rep in $(seq "$REPS"); do
    for arm in off on on off; do
        i=$((i + 1))
        out="$HERE/runs/walls-$LABEL-$rep-$i-$arm"
        if [ "$arm" = on ]; then
            step env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$PY" "$HERE/walls.py" \
                --model resnet152 --tuning-dir "$DB" --json "$out.json" 2>&1 \
                | grep -v -e 'Fast mode segfaults' -e '^\[walls\] round' | tee "$out.txt"
        else
            step "$PY" "$HERE/walls.py" --model resnet152 --tuning-dir "$DB" \
                --json "$out.json" 2>&1 \
                | grep -v -e 'Fast mode segfaults' -e '^\[walls\] round' | tee "$out.txt"
        fi
    done
done
