#!/usr/bin/env bash
# One fork server for every variant (before, commit c025ff8's edgebench/forkserver.py, in a
# git worktree of its own) against one branch per variant (after, this checkout): the same
# smoke run of pytorch and onnxruntime, and each cell's resident memory at its start and at
# its peak (results.jsonl memory_mb; memory.py prints them side by side).
# Writes experiments/forkserver-branches/{before,after}/. About a minute on 2 cores.
#
#   bash experiments/forkserver-branches/run.sh
#   bash experiments/forkserver-branches/run.sh --dry-run     # the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
here=$PWD
py=$here/.venv/bin/python
exp=$here/experiments/forkserver-branches
if [ "$DRY" = 1 ]; then
    tmp=/tmp/forkserver-branches
else
    tmp=$(mktemp -d)
    trap 'git -C "$here" worktree remove --force "$tmp/before" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
fi
step git worktree add -q --detach "$tmp/before" HEAD
step git -C "$tmp/before" checkout -q c025ff8 -- edgebench/forkserver.py
args=(--models test_efficientnet --variants pytorch onnxruntime --tasks latency throughput
      --weights random --profile smoke --cache-dir "$tmp/cache")
for side in before after; do
  src=$here; [ "$side" = before ] && src=$tmp/before
  if [ "$DRY" = 1 ]; then
    echo "+ (in $src) $py -m edgebench.full ${args[*]} --out $tmp/$side" >&3
    continue
  fi
  (cd "$src" && "$py" -m edgebench.full "${args[@]}" --out "$tmp/$side" >/dev/null)
  mkdir -p "$exp/$side"
  cp "$tmp/$side"/{results.jsonl,run.json} "$exp/$side/"
done
run_cmd "$py" "$exp/memory.py" "$exp"
