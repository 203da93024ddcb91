# shellcheck shell=bash
# The six study models' best Zen 5 databases against ORT in one sitting (sourced after
# experiments/lib.sh), for run.sh here and the later sittings that replace some databases:
#   best_db_zen5 MODEL   the best database of MODEL on the Zen 5 as of 2026-11-29 14:00
#                        (docs/tvm.md, "Best so far on the Zen 5"), restored from its archive
#                        where missing
#   sitting RUNS MODELS  for each model, `best_db MODEL` (the caller's: best_db_zen5 or its
#                        own) against ORT, alternated in processes of their own, 4 runs each
#                        (pool_vs_ort.py compare): RUNS/MODEL/{database.txt,vs-ort.*}
best_db_zen5() {
    local dir root
    case $1 in
        squeezenet1_1) dir=results/experiments/tvm-pool-schedule-2026-11-29/tuning
                       root=experiments/tvm-databases/pool-schedule ;;
        resnet152) dir=results/experiments/tvm-transfer-multi-2026-11-29/tuning
                   root=experiments/tvm-databases/multi-vector-transfer ;;
        mobilenetv2_100) dir=results/experiments/tvm-multi-vector-2026-11-29/multi
                         root=experiments/tvm-databases/multi-vector ;;
        # the kept Zen 5 databases of ../tvm-six-models-zen5-2026-11-29/
        *) tvm_best_db "$1"; return ;;
    esac
    restore_tvm_db "$1" "$dir" "$root"
    echo "$dir"
}

sitting() {
    local m runs db
    for m in $2; do
        runs=$1/$m
        mkdir -p "$runs"
        db=$(best_db "$m")
        echo "$db" > "$runs/database.txt"
        [ -f "$runs/vs-ort.json" ] || step "$PY" \
            experiments/tvm-threadpool-vs-ort-2026-11-27/pool_vs_ort.py compare --model "$m" \
            --tuning-dir "$db" --arms ort,tvm --reps 4 --json "$runs/vs-ort.json" 2>&1 \
            | grep -v 'Fast mode segfaults' | tee "$runs/vs-ort.txt"
    done
}
