#!/usr/bin/env bash
# The two A/Bs on the tuned databases run.sh left (a quiet machine: nothing else running):
# the Relax VM's compiled mode against its bytecode (exec_mode_ab.py) on efficientnet_b0,
# squeezenet1_1 and mobilenetv2_100, and TVM's threads unbound against bound
# (thread_binding_ab.py) on squeezenet1_1 and efficientnet_b0. About 12 min on 2 cores.
# Then collect.sh copies the JSON files into ab/.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/tvm-six-models-2026-11-25}
HERE=experiments/tvm-six-models-2026-11-25
export PYTHONPATH=$PWD
mkdir -p "$WORK/ab"
for m in efficientnet_b0 squeezenet1_1 mobilenetv2_100; do
    "$PY" "$HERE/exec_mode_ab.py" --model "$m" --tuning-dir "$WORK/tuning" \
        --json "$WORK/ab/exec-mode-$m.json" > "$WORK/ab/exec-mode-$m.log" 2>&1
done
for m in squeezenet1_1 efficientnet_b0; do
    "$PY" "$HERE/thread_binding_ab.py" --model "$m" --tuning-dir "$WORK/tuning" \
        --json "$WORK/ab/thread-binding-$m.json" > "$WORK/ab/thread-binding-$m.log" 2>&1
done
