"""mobilenetv2_100 lowered in NHWC with and without passes.clip_as_min_max: task counts.

    python experiments/tvm-transfer/profile/nhwc_tasks.py   # output: nhwc_tasks.txt
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from converters.tvm import importer, passes, targets  # noqa: E402
from edgebench.models import make_spec  # noqa: E402

spec = make_spec("mobilenetv2_100", "random-seed-0")
target, _ = targets.resolve_target("host")
mod, _, _ = importer.import_model(spec.build(), (1, 3, 224, 224), "torch.export")
for name, rewrite in (("without clip_as_min_max", lambda m: m),
                      ("with clip_as_min_max", passes.clip_as_min_max)):
    saved, passes.clip_as_min_max = passes.clip_as_min_max, rewrite
    try:
        tasks = passes.extract_tasks(passes.lower_for_tuning(mod, target, "NHWC"), target)
    finally:
        passes.clip_as_min_max = saved
    tr = sorted(t.task_name for t in tasks if "transpose" in t.task_name)
    print(f"{name}: {len(tasks)} tasks, {len(tr)} with a transpose: {', '.join(tr)}")
