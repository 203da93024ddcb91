#!/usr/bin/env bash
# Times probe.py in the emulated Orin at 1 and 2 torch threads (ABBA), with the host's two
# cores idle and then with two busy-looping host processes (as two pytest-xdist workers are
# while the emulated lane runs beside them). Output: runs/<stamp>.jsonl, one line per arm.
set -euo pipefail
cd "$(dirname "$0")"
EMU=../../jetson/emulated/run.sh
mkdir -p runs
out=runs/$(date -u +%Y%m%dT%H%M%S).jsonl
# shellcheck source=experiments/lib.sh
. ../lib.sh
record_cpu cpu.txt
arm() {  # arm LOAD THREADS
  local line
  line=$("$EMU" python "$PWD/probe.py" "$2" 2>>"${out%.jsonl}.stderr" | tail -1)
  echo "{\"load\": \"$1\", \"probe\": $line}" | tee -a "$out"
}
for load in idle busy; do
  pids=()
  if [ "$load" = busy ]; then
    for _ in 1 2; do python3 -c "while True: pass" & pids+=($!); done
  fi
  for t in 1 2 2 1; do arm "$load" "$t"; done
  for p in "${pids[@]}"; do kill "$p"; done
done
