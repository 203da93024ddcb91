#!/usr/bin/env bash
# How long the emulated Orin's stand-in `nvpmodel -q` takes in the arm64 root under QEMU:
# the version before its cached answer (git show BASE:jetson/emulated/tegra/nvpmodel) against
# the working tree's, alternated (ABBA...), ROUNDS rounds, each call timed by /usr/bin/time.
# Needs the emulated root (jetson/emulated/setup.sh) and root (chroot). The two scripts are
# copied into the root under other names and removed afterwards; so is the cached answer.
#
#   bash experiments/emulated-nvpmodel-query-2026-11-27/run.sh [BASE]   # default BASE: 5cd0530
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                # the repository root
HERE=experiments/emulated-nvpmodel-query-2026-11-27
ROOT=${ROOT:-.emulated/root}
BASE=${1:-5cd0530}
ROUNDS=${ROUNDS:-10}
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
record_cpu "$HERE/cpu.txt"
git show "$BASE:jetson/emulated/tegra/nvpmodel" > "$ROOT/usr/sbin/nvpmodel.before"
cp jetson/emulated/tegra/nvpmodel "$ROOT/usr/sbin/nvpmodel.after"
chmod +x "$ROOT/usr/sbin/nvpmodel.before" "$ROOT/usr/sbin/nvpmodel.after"
trap 'rm -f "$ROOT/usr/sbin/nvpmodel.before" "$ROOT/usr/sbin/nvpmodel.after" "$ROOT/var/lib/nvpmodel/edgebench-query"' EXIT
{
    echo "# $(date -u +%FT%TZ) $(cat "$HERE/cpu.txt"); base $BASE; load: $(cut -d' ' -f1-3 /proc/loadavg)"
    for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
        for v in $order; do
            /usr/bin/time -f "$v %e" chroot "$ROOT" "/usr/sbin/nvpmodel.$v" -q 2>&1 >/dev/null
        done
    done
} | tee "$HERE/times.txt"
# Each version's median and range, from times.txt.
"${PY:-.venv/bin/python}" - "$HERE/times.txt" <<'EOF' | tee "$HERE/summary.txt"
import statistics
import sys

calls = {}
for line in open(sys.argv[1]):
    word = line.split()
    if word and word[0] in ("before", "after"):
        calls.setdefault(word[0], []).append(float(word[1]))
for k in sorted(calls):
    v = calls[k]
    print(f"{k}: median {statistics.median(v):.2f} s, {min(v):.2f}-{max(v):.2f} s over {len(v)} calls")
EOF
