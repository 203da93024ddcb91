#!/usr/bin/env bash
# Rerun "compare-noise": how often does `python -m edgebench.compare` call a change where there
# is none (A/A), and does it see a real one (A/B, ONNX Runtime on 1 thread instead of the
# default, one per physical core)? Three runs back to back: A1, A2 (the same command) and B
# (`--ort-threads 1`), then the A1/A2 and A1/B comparisons and the counts. About 6-10 minutes on
# 2 cores with the quick profile. Run it on a quiet machine (nothing else timing).
#
#   bash experiments/compare-noise/run.sh
#   THRESHOLD=10 bash experiments/compare-noise/run.sh        # another minimum effect size
#   PROFILE=paper bash experiments/compare-noise/run.sh       # long windows (hours)
#
# Each invocation writes a new folder $WORK/<UTC timestamp>/ (runs a1 a2 b, comparisons aa ab).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                          # the repository root
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/compare-noise}    # git-ignored
PROFILE=${PROFILE:-quick}
THRESHOLD=${THRESHOLD:-5}
MODELS=${MODELS:-"mobilenetv2_100 squeezenet1_1"}
VARIANTS=${VARIANTS:-"pytorch onnxruntime"}
D=$WORK/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$D"

run() {   # run NAME [extra flags...]: one edgebench run; a failed cell (exit 1) is reported, not fatal
    local name=$1; shift
    # shellcheck disable=SC2086
    "$PY" -m edgebench.full --models $MODELS --variants $VARIANTS --tasks latency throughput \
        --profile "$PROFILE" --out "$D/$name" "$@" > "$D/$name.log" 2>&1
    local rc=$?
    echo "run $name: exit $rc ($D/$name.log)"
    [ "$rc" -le 1 ] || exit "$rc"
}

run a1
run a2
run b --ort-threads 1

"$PY" -m edgebench.compare "$D/a1" "$D/a2" --threshold "$THRESHOLD" --out "$D/aa" > "$D/aa.log" 2>&1
echo "compare A1 A2: exit $? ($D/aa/compare.md)"
"$PY" -m edgebench.compare "$D/a1" "$D/b" --threshold "$THRESHOLD" --out "$D/ab" > "$D/ab.log" 2>&1
echo "compare A1 B:  exit $? ($D/ab/compare.md)"

"$PY" - "$D" "$THRESHOLD" <<'EOF'
import csv, math, sys
from collections import Counter
d, thr = sys.argv[1], float(sys.argv[2])

def rows(name):
    with open(f"{d}/{name}/compare.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["section"] == "performance"]

def need(r):
    """The smallest threshold at which this cell is no longer called changed (log-symmetric
    rule: the whole CI beyond 1+t or 1/(1+t)); the point ratio where there is no CI."""
    lo, hi = (float(r["ci95_low"]), float(r["ci95_high"])) if r["ci95_low"] else (float(r["ratio"]),) * 2
    return max(lo - 1, 1 / hi - 1, 0.0)

def show(name, rs):
    c = Counter(r["verdict"] for r in rs)
    changed = c["slower"] + c["faster"]
    print(f"  {name}: {len(rs)} cells, {changed} called changed "
          f"({c['slower']} slower, {c['faster']} faster), {c['no significant change']} no change; "
          f"no CI: {sum(1 for r in rs if not r['ci95_low'])}")
    return changed

aa, ab = rows("aa"), rows("ab")
print(f"\nthreshold {thr:g}%")
print("A/A (A1 vs A2, same command):")
changed = show("all", aa)
for v in sorted({r["variant"] for r in aa}):
    show(v, [r for r in aa if r["variant"] == v])
print(f"  false-alarm rate: {changed}/{len(aa)} = {changed / max(len(aa), 1):.0%} (target <= 10%)")
ratios = sorted(float(r["ratio"]) for r in aa if r["task"] == "latency")
if ratios:
    print(f"  A2/A1 p50 latency ratios: min {ratios[0]:.3f}, median {ratios[len(ratios) // 2]:.3f}, "
          f"max {ratios[-1]:.3f}")
needs = sorted((need(r) for r in aa), reverse=True)
k = len(needs) // 10                    # at most one cell in ten may stay flagged
if needs:
    print(f"  smallest threshold with <= 10% A/A cells flagged: {100 * needs[k]:.1f}% "
          f"(largest per-cell need {100 * needs[0]:.1f}%)")
print("A/B (A1 vs B = --ort-threads 1):")
for v in sorted({r["variant"] for r in ab}):
    show(v, [r for r in ab if r["variant"] == v])
ort = [r for r in ab if r["variant"] == "onnxruntime"]
if ort:
    print(f"  onnxruntime cells called slower: {sum(r['verdict'] == 'slower' for r in ort)}/{len(ort)} "
          "(the change; pytorch cells should show none)")
EOF
