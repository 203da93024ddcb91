#!/usr/bin/env bash
# On the lent GPU machine (the device tool), from the repo root, after TVM's two parts were
# carried (../tvm-cuda-h100-2026-11-27/prepare.sh: .tv0, then .tv1 with the tvm-ffi, xgboost
# and py-spy wheels), each copied to /tmp/parts. Three tuning sessions of mobilenetv2_100 for
# the GPU, MetaSchedule measuring on it, each under watch_exit.py:
#   A. a fresh database, TRIALS_A trials, TVM's LocalBuilder (a new worker pool per batch),
#      run to its end;
#   B. another fresh database, the same, with the builder's pool kept between batches;
#   C. A's database resumed to a larger budget and stopped with SIGINT after INT_AFTER s.
# tuning.json's "phases" says where each session's time went (search, build, run, learn);
# watch_exit.py says how long each process took to exit after its summary, and dumps its
# stacks (faulthandler, py-spy) where it did not within EXIT_WAIT s. Everything in $OUT.
set -uo pipefail
HERE=experiments/tvm-cuda-tuning-cost-2026-11-27
# shellcheck source=experiments/tvm-cuda-h100-2026-11-27/install_tvm.sh
. experiments/tvm-cuda-h100-2026-11-27/install_tvm.sh
export PATH=/tmp/site/bin:$PATH PYTHONPATH=$PYTHONPATH:$PWD
model=mobilenetv2_100
tune=(python3 "$HERE/tune_with_stacks.py" --model "$model" --target nvidia/nvidia-h100
      --weights random --no-progress)
python3 -c 'import time, subprocess, sys; t = time.perf_counter(); subprocess.run([sys.executable, "-c", "import tvm, tvm.s_tir.meta_schedule"], check=True); print(f"a fresh worker imports tvm + meta_schedule in {time.perf_counter() - t:.2f} s")' | tee "$OUT/import.txt"
session() {         # name, BUILDER_POOL, tuning dir, trials, watch_exit options...
    local name=$1 pool=$2 dir=$3 trials=$4
    shift 4
    echo "== $name: builder pool $pool, $trials trials, $(date -u +%T)"
    BUILDER_POOL=$pool python3 "$HERE/watch_exit.py" --summary "$OUT/$name-summary.json" \
        --json "$OUT/$name-exit.json" "$@" -- "${tune[@]}" --tuning-dir "$dir" \
        --trials "$trials" --summary "$OUT/$name-summary.json" >"$OUT/$name.log" 2>&1
    tail -n 3 "$OUT/$name.log"
    python3 - "$dir" "$OUT/$name-exit.json" <<'PY'
import glob, json, sys
meta = json.load(open(glob.glob(sys.argv[1] + "/*/*/tuning.json")[0]))
s = meta["sessions"][-1]
print("phases", json.dumps(s.get("phases")), "tuning_s", s["tuning_s"],
      "interrupted", s["interrupted"])
print("exit", json.dumps({k: v for k, v in json.load(open(sys.argv[2])).items()
                          if k in ("summary_s", "exit_s", "exit_after_summary_s", "hung",
                                   "returncode", "sigint_s")}))
PY
}
session A fresh /tmp/tuning-a "${TRIALS_A:-48}" --exit-wait "${EXIT_WAIT:-25}" --limit 200
session B kept /tmp/tuning-b "${TRIALS_A:-48}" --exit-wait "${EXIT_WAIT:-25}" --limit 200
session C fresh /tmp/tuning-a 400 --sigint-after "${INT_AFTER:-75}" --exit-wait "${EXIT_WAIT:-25}" --limit 200
for d in a b; do cp "$(ls /tmp/tuning-$d/*/*/tuning.json)" "$OUT/tuning-$d.json"; done
