"""Swin-T, only its `take` (relative-position-bias gather) tasks, 12 trials: MetaSchedule's
default argument allocation ("default") against edgebench's `runner.alloc_valid_indices`
("fixed", what `edgebench.tune` uses). From the repo root:
    python experiments/swin-take-runner/take_swin.py default|fixed
"""
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # the repo root

from converters.tvm import runner, targets, tuning  # noqa: E402
from edgebench.models import make_spec

mode = sys.argv[1]
if mode == "default":        # MetaSchedule's own LocalRunner: random values in index tensors
    def _runner(cfg):
        from tvm.s_tir import meta_schedule as ms
        ev = ms.runner.EvaluatorConfig(number=cfg.number, repeat=cfg.repeat,
                                       min_repeat_ms=cfg.min_repeat_ms)
        return ms.runner.LocalRunner(timeout_sec=cfg.run_timeout_s, evaluator_config=ev)
    runner.make_runner = _runner     # tuning.tune calls runner.make_runner(cfg)
target, _ = targets.resolve_target("host")
spec = make_spec("swin_tiny_patch4_window7_224", "random-seed-0", {})
t = time.time()
res = tuning.tune(spec.build(), (3, 224, 224), 1, target, Path(tempfile.mkdtemp()),
                  tuning.TuneConfig(trials=12, trials_per_iter=2, population=32, op_names=["take"]))
print(mode, {k: res[k] for k in ("errors", "build_errors", "first_error", "trials_run",
                                  "tasks_tuned", "model_tasks")},
      [(p["name"], p["trials"], p["best_us"]) for p in res["per_task"]], round(time.time() - t, 1))
