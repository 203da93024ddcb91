#!/usr/bin/env bash
# Reruns the emulated Orin's power-mode sweep with jtop's power checked against the INA3221
# files (issue 32). Needs root and jetson/emulated/setup.sh; writes into this folder's sweepN/.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-experiments/power-modes-emulated/sweep-$(date -u +%Y%m%dT%H%M%SZ)}
bash jetson/emulated/jtop.sh start
trap 'bash jetson/emulated/jtop.sh stop' EXIT
EDGEBENCH_POWER_SOURCE=jtop EDGEBENCH_POWER_CHECK=ina3221-sysfs jetson/emulated/run.sh \
  python -m edgebench.full --models squeezenet1_1 --variants onnxruntime --tasks latency \
  --weights random --data datasets/sample --max-images 1 --power-modes MAXN,50W --out "$OUT"
python3 - "$OUT" <<'PY'
import json, sys
for line in open(f"{sys.argv[1]}/results.jsonl"):
    r = json.loads(line); p = r["power_w"]; c = p["check"]
    print(f'{r["power_mode"]:9} jtop {p["mean"]:.2f} W  ina3221 {c["mean"]:.2f} W  {100 * c["rel_diff"]:+.1f} %  '
          f'p50 {r["latency_ms"]["p50"]:.0f} ms  {r["energy_mj_per_sample"]:.0f} mJ/inference')
PY
