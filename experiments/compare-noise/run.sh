#!/usr/bin/env bash
# Rerun "compare-noise": how often does `python -m edgebench.compare` call a change where there
# is none (A/A), and does it see a real one (A/B, ONNX Runtime on 1 thread instead of the
# default, one per physical core)? Three runs back to back: A1, A2 (the same command) and B
# (`--ort-threads 1`), then the A1/A2 and A1/B comparisons and the counts (counts.py). First
# the two probes the README cites: fork against spawn (benchmarks/fork_server_noise.py, about
# 2 minutes) and where a forked child's buffers land (benchmarks/fork_layout_probe.py, with no
# shift, the first shift and today's). About 8-12 minutes on 2 cores with the quick profile.
# Run it on a quiet machine (nothing else timing).
#
#   bash experiments/compare-noise/run.sh
#   bash experiments/compare-noise/run.sh --dry-run           # the commands, run nothing
#   THRESHOLD=10 bash experiments/compare-noise/run.sh        # another minimum effect size
#   PROFILE=paper bash experiments/compare-noise/run.sh       # long windows (hours)
#   PROBES=0 bash experiments/compare-noise/run.sh            # the runs and comparisons only
#
# Each invocation writes a new folder $WORK/<UTC timestamp>/ (runs a1 a2 b, comparisons aa ab).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1                          # the repository root
# shellcheck source=experiments/lib.sh
. experiments/lib.sh
run_options "$@"
PY=${PY:-.venv/bin/python}
WORK=${WORK:-results/experiments/compare-noise}    # git-ignored
PROFILE=${PROFILE:-quick}
THRESHOLD=${THRESHOLD:-5}
MODELS=${MODELS:-"mobilenetv2_100 squeezenet1_1"}
VARIANTS=${VARIANTS:-"pytorch onnxruntime"}
D=$WORK/$(date -u +%Y%m%dT%H%M%SZ)
rc=0
[ "$DRY" = 1 ] || mkdir -p "$D"

if [ "${PROBES:-1}" = 1 ]; then
    step "$PY" benchmarks/fork_server_noise.py --sessions 3 --cells 3
    for arm in --none --old ""; do
        # shellcheck disable=SC2086  # no argument for today's shift
        step "$PY" benchmarks/fork_layout_probe.py $arm
    done
fi

full() {   # full NAME [extra flags...]: one edgebench run; a failed cell (exit 1) is reported, not fatal
    local name=$1; shift
    # shellcheck disable=SC2086
    step "$PY" -m edgebench.full --models $MODELS --variants $VARIANTS --tasks latency throughput \
        --profile "$PROFILE" --out "$D/$name" "$@" > "$(sink "$D/$name.log")" 2>&1
    rc=$?
    [ "$DRY" = 1 ] || echo "run $name: exit $rc ($D/$name.log)"
    [ "$rc" -le 1 ] || exit "$rc"
}

full a1
full a2
full b --ort-threads 1

step "$PY" -m edgebench.compare "$D/a1" "$D/a2" --threshold "$THRESHOLD" --out "$D/aa" \
    > "$(sink "$D/aa.log")" 2>&1
rc=$?; [ "$DRY" = 1 ] || echo "compare A1 A2: exit $rc ($D/aa/compare.md)"
step "$PY" -m edgebench.compare "$D/a1" "$D/b" --threshold "$THRESHOLD" --out "$D/ab" \
    > "$(sink "$D/ab.log")" 2>&1
rc=$?; [ "$DRY" = 1 ] || echo "compare A1 B:  exit $rc ($D/ab/compare.md)"
run_cmd "$PY" experiments/compare-noise/counts.py "$D" "$THRESHOLD"
