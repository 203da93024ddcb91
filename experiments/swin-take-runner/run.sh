#!/usr/bin/env bash
# Rerun "Swin-T's take tasks in MetaSchedule's runner": only Swin-T's six `take` (gather)
# tasks, 12 trials, with MetaSchedule's default argument allocation and with edgebench's
# (runner.alloc_valid_indices). About 2 min on 2 cores. Output: output.txt's two lines.
#
#   bash experiments/swin-take-runner/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                         # the repository root
PY=${PY:-.venv/bin/python}
for mode in default fixed; do
    echo "\$ python experiments/swin-take-runner/take_swin.py $mode"
    "$PY" experiments/swin-take-runner/take_swin.py "$mode"
done
