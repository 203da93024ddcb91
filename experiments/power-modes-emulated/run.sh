#!/usr/bin/env bash
# Reruns the emulated Orin's power-mode sweep with jtop's power checked against the INA3221
# files: squeezenet1_1, ONNX Runtime, latency, --power-modes MAXN,50W, power from jtop's
# service (EDGEBENCH_POWER_SOURCE=jtop) checked against the files at the same instants
# (EDGEBENCH_POWER_CHECK=ina3221-sysfs); power.py prints one line per mode from the records.
# Needs root and jetson/emulated/setup.sh; writes OUT (default this folder's sweep-<UTC time>/).
#
#   bash experiments/power-modes-emulated/run.sh
#   bash experiments/power-modes-emulated/run.sh --dry-run     # the commands, run nothing
#   OUT=/tmp/sweep bash experiments/power-modes-emulated/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
PY=${PY:-.venv/bin/python}
OUT=${OUT:-experiments/power-modes-emulated/sweep-$(date -u +%Y%m%dT%H%M%SZ)}
step bash jetson/emulated/jtop.sh start
[ "$DRY" = 1 ] || trap 'bash jetson/emulated/jtop.sh stop' EXIT
EDGEBENCH_POWER_SOURCE=jtop EDGEBENCH_POWER_CHECK=ina3221-sysfs step jetson/emulated/run.sh \
  python -m edgebench.full --models squeezenet1_1 --variants onnxruntime --tasks latency \
  --weights random --data datasets/sample --max-images 1 --power-modes MAXN,50W --out "$OUT"
run_cmd "$PY" experiments/power-modes-emulated/power.py "$OUT"
[ "$DRY" = 0 ] || echo "+ bash jetson/emulated/jtop.sh stop" >&3
