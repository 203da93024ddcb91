#!/usr/bin/env bash
# Does pytest-xdist (two workers, a file per worker at a time) shorten CI's slow tests on the
# 2-core VM? The same two files run in one process, then in two workers, then in one process
# again (ABA: the VM's speed drifts), without the emulated lane; see README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=experiments/ci-parallel-2026-11-26
files=(tests/test_full.py tests/test_bad_input.py)
lscpu > "$here/cpu.txt"
for arm in serial parallel serial2; do
    opts=(-p no:cacheprovider -q -n 0)         # -n 0: in one process (addopts has -n)
    [ "$arm" = parallel ] && opts+=(-n 2 --dist loadfile)
    start=$(date +%s.%N)
    .venv/bin/python -m pytest "${opts[@]}" "${files[@]}" > "$here/$arm.txt" 2>&1 || true
    end=$(date +%s.%N)
    printf '%s %.1f s\n' "$arm" "$(echo "$end - $start" | bc)" | tee -a "$here/walls.txt"
done
