#!/usr/bin/env bash
# One fork server for every variant (before, commit c025ff8's edgebench/forkserver.py) against
# one branch per variant (after): the same smoke run of pytorch and onnxruntime, and each
# cell's resident memory at its start and at its peak (results.jsonl memory_mb).
# Writes experiments/forkserver-branches/{before,after}/. About a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=$PWD
py=$here/.venv/bin/python
exp=$here/experiments/forkserver-branches
tmp=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$tmp/before" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/before" HEAD
git -C "$tmp/before" checkout -q c025ff8 -- edgebench/forkserver.py
args=(--models test_efficientnet --variants pytorch onnxruntime --tasks latency throughput
      --weights random --profile smoke --cache-dir "$tmp/cache")
for side in before after; do
  src=$here; [ "$side" = before ] && src=$tmp/before
  (cd "$src" && "$py" -m edgebench.full "${args[@]}" --out "$tmp/$side" >/dev/null)
  mkdir -p "$exp/$side"
  cp "$tmp/$side"/{results.jsonl,run.json} "$exp/$side/"
done
"$py" - "$exp" <<'PY'
import json, sys
from pathlib import Path
exp = Path(sys.argv[1])
rows = {}
for side in ("before", "after"):
    for line in (exp / side / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows.setdefault((r["variant"], r["task"]), {})[side] = r["memory_mb"]
print(f"{'cell':28} {'RSS at start, MB':>22} {'peak RSS, MB':>22}")
for (v, t), m in rows.items():
    b, a = m["before"], m["after"]
    print(f"{v + ' ' + t:28} {b['process_start']:>8.1f} -> {a['process_start']:>8.1f} "
          f"{b['peak']:>10.1f} -> {a['peak']:>8.1f}")
PY
