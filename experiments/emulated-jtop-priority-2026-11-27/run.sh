#!/usr/bin/env bash
# Does jtop's service in the emulated Orin starve beside a loaded CI machine, and does a
# higher priority for it fix that? (CI 2026-11-27: jtop served its idle sample through both
# power modes' 16 s windows while the INA3221 files read 14.24 W.)
#
# Load, as CI has it: two native busy loops (the two xdist workers) and two emulated ones
# (the cell's ORT threads). Arms, alternated ABBA: the service at nice 0 (as jtop.sh started
# it until this experiment) and at nice -10. Each block: a client counts fresh samples over
# WINDOW seconds. Run as root from the repository: bash experiments/emulated-jtop-priority-2026-11-27/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/emulated-jtop-priority-2026-11-27
WINDOW=${WINDOW:-30}
BLOCKS=${BLOCKS:-2}
OUT=$HERE/fresh_samples.jsonl
LOG=results/experiments/emulated-jtop-priority-2026-11-27/client.log    # git-ignored
mkdir -p "$(dirname "$LOG")"
: > "$OUT"; : > "$LOG"
lscpu | grep -m1 'Model name' | tee "$HERE/cpu.txt"

bash jetson/emulated/jtop.sh start
loads=()
cleanup() {
  for p in "${loads[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
  bash jetson/emulated/jtop.sh stop || true
}
trap cleanup EXIT
for _ in 1 2; do
  setsid python3 -c 'while True: pass' & loads+=($!)
  setsid jetson/emulated/run.sh python -c 'while True: pass' >/dev/null 2>&1 & loads+=($!)
done
sleep 10
svc=$(cat .emulated/jtop/service.pid)
arm() {  # nice value for every process of the service's group (QEMU's threads included)
  local n=$1
  for p in $(pgrep -g "$svc"); do renice -n "$n" -p "$p" >/dev/null; done
  jetson/emulated/run.sh python "$HERE/fresh_samples.py" "$WINDOW" 2>>"$LOG" \
    | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d['nice']=$n; print(json.dumps(d))" \
    | tee -a "$OUT"
}
for _ in $(seq "$BLOCKS"); do arm 0; arm -10; arm -10; arm 0; done
