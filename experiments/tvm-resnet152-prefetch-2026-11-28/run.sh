#!/usr/bin/env bash
# Issue 33: software prefetch of the weights in ResNet-152's tuned TVM kernels (prefetch.py).
# 1. every kernel alone, warm and flushed, with and without prefetch at three distances
#    (kernels.py); 2. the network with prefetch in every kernel it fits, beside the network
#    without it, a rebuild of that (the control) and ORT, in one process (walls.py);
#    3. the same with prefetch only in the kernels whose flushed time step 1 found it cut
#    by 2 % or more, in PROCS processes (default 3). The database is
#    ../tvm-resnet152-small-tasks-2026-11-28/'s measured + cold one (512 trials, git-ignored,
#    from that experiment's run.sh). About 15 minutes on the 2-core Zen 4.
#
#   bash experiments/tvm-resnet152-prefetch-2026-11-28/run.sh [PROCS]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/tvm-resnet152-prefetch-2026-11-28
WORK=results/experiments/tvm-resnet152-prefetch-2026-11-28   # git-ignored: the logs
DB=${DB:-results/experiments/tvm-resnet152-small-tasks-2026-11-28/measured-cold}
PROCS=${1:-3}
M=resnet152
ARMS="1024:2 2048:2 4096:2"

# shellcheck source=experiments/lib.sh
. experiments/lib.sh

start_experiment "$HERE"
mkdir -p "$WORK"
[ -d "$DB" ] || { echo "no database in $DB"; exit 1; }
quiet() { grep -v -e 'Fast mode segfaults' -e '^\[prefetch\] round' -e '^\[prefetch\] built'; }
# shellcheck disable=SC2086  # ARMS is a list
[ -f "$HERE/runs/kernels.json" ] ||
    step "$PY" "$HERE/kernels.py" --model "$M" --tuning-dir "$DB" --arms $ARMS --top 40 \
        --rounds 6 --json "$HERE/runs/kernels.json" 2> "$WORK/kernels.log" > "$HERE/runs/kernels.txt"
# shellcheck disable=SC2086
[ -f "$HERE/runs/walls-every-kernel.json" ] ||
    step "$PY" "$HERE/walls.py" --model "$M" --tuning-dir "$DB" --arms rebuild $ARMS 128:3 \
        --json "$HERE/runs/walls-every-kernel.json" 2>&1 | quiet > "$HERE/runs/walls-every-kernel.txt"
for i in $(seq "$PROCS"); do
    # shellcheck disable=SC2086
    [ -f "$HERE/runs/walls-selected-$i.json" ] ||
        step "$PY" "$HERE/walls.py" --model "$M" --tuning-dir "$DB" --arms rebuild $ARMS \
            --select "$HERE/runs/kernels.json" --json "$HERE/runs/walls-selected-$i.json" 2>&1 \
            | quiet > "$HERE/runs/walls-selected-$i.txt"
done
