#!/usr/bin/env bash
# Swin-T at the same 512 trials with a per-task cap of 64 instead of the default
# (ceil(512 / 125 tasks) * 4 = 20): its 9 heaviest matmuls, 68 of its 131 ms of kernels, had
# hit the cap of 20 while 57 data-movement tasks took one trial each. Then both databases'
# builds and ONNX Runtime timed in one process in rotating rounds (db_ab.py).
#
#   bash experiments/tvm-six-models-2026-11-25/cap_ab.sh    (about 35 min on 2 cores)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-six-models-2026-11-25}
M=${MODEL:-swin_tiny_patch4_window7_224}
CAP=${CAP:-64}
HERE=experiments/tvm-six-models-2026-11-25
export PYTHONPATH=$PWD
mkdir -p "$WORK/cap$CAP" "$HERE/ab"
"$PY" -m edgebench.tune --model "$M" --trials 512 --tuning-dir "$WORK/tuning-cap$CAP" --no-reuse \
    --max-trials-per-task "$CAP" --no-progress --summary "$WORK/cap$CAP/tune-512-$M.json" \
    > "$WORK/cap$CAP/tune-512-$M.log" 2>&1 || exit 1
"$PY" "$HERE/db_ab.py" --model "$M" --tuning-dir "cap20 (default)=$WORK/tuning" \
    --tuning-dir "cap$CAP=$WORK/tuning-cap$CAP" --json "$HERE/ab/cap-$M.json" \
    > "$WORK/cap$CAP/db-ab-$M.log" 2>&1 || exit 1
cp "$WORK/cap$CAP/tune-512-$M.json" "$HERE/ab/cap$CAP-tune-512-$M.json"
