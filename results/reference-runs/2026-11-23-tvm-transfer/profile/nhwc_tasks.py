"""mobilenetv2_100 lowered in NHWC with and without core.clip_as_min_max: task counts."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from converters.tvm import core  # noqa: E402
from edgebench.models import make_spec  # noqa: E402

spec = make_spec("mobilenetv2_100", "random-seed-0")
target, _ = core.resolve_target("host")
mod, _, _ = core.import_model(spec.build(), (1, 3, 224, 224), "torch.export")
for name, rewrite in (("without clip_as_min_max", lambda m: m),
                      ("with clip_as_min_max", core.clip_as_min_max)):
    saved, core.clip_as_min_max = core.clip_as_min_max, rewrite
    try:
        tasks = core.extract_tasks(core.lower_for_tuning(mod, target, "NHWC"), target)
    finally:
        core.clip_as_min_max = saved
    tr = sorted(t.task_name for t in tasks if "transpose" in t.task_name)
    print(f"{name}: {len(tasks)} tasks, {len(tr)} with a transpose: {', '.join(tr)}")
