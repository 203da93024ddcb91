#!/usr/bin/env bash
# Issue 33, after run.sh: the prefetch placed outside the register tile (prefetch.plan's
# placement "tile") beside the first placement ("stream"), at 2048 floats with prefetcht1.
# Every kernel alone warm and flushed (kernels.py), then the network with each placement in
# the kernels whose flushed time it cut by 2 % or more, beside the network without prefetch,
# its rebuild and ORT, in PROCS processes (default 2). About 9 minutes on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-prefetch-2026-11-28/tile.sh [PROCS]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-prefetch-2026-11-28
WORK=results/experiments/tvm-resnet152-prefetch-2026-11-28   # git-ignored: the logs
DB=${DB:-results/experiments/tvm-resnet152-small-tasks-2026-11-28/measured-cold}
PROCS=${1:-2}
M=resnet152
ARMS="2048:2 2048:2:tile"

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
[ -d "$DB" ] || { echo "no database in $DB"; exit 1; }
quiet() { grep -v -e 'Fast mode segfaults' -e '^\[prefetch\] round' -e '^\[prefetch\] built'; }
# shellcheck disable=SC2086  # ARMS is a list
[ -f "$HERE/runs/kernels-tile.json" ] ||
    step "$PY" "$HERE/kernels.py" --model "$M" --tuning-dir "$DB" --arms $ARMS --top 40 \
        --rounds 6 --json "$HERE/runs/kernels-tile.json" 2> "$WORK/kernels-tile.log" \
        > "$HERE/runs/kernels-tile.txt"
for i in $(seq "$PROCS"); do
    # shellcheck disable=SC2086
    [ -f "$HERE/runs/walls-selected-tile-$i.json" ] ||
        step "$PY" "$HERE/walls.py" --model "$M" --tuning-dir "$DB" --arms rebuild $ARMS \
            --select "$HERE/runs/kernels-tile.json" --json "$HERE/runs/walls-selected-tile-$i.json" \
            2>&1 | quiet > "$HERE/runs/walls-selected-tile-$i.txt"
done
