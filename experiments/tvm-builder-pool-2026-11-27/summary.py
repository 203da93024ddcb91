"""Each session's time by phase (tuning.json's last session): seconds, per batch (batches =
machine-speed samples, one per measured batch) and per candidate.

  python summary.py runs/*-tuning.json"""
import json
import sys
from pathlib import Path

from converters.tvm.scheduler import PHASES

print("| session | pool | trials | batches | tuning s | " + " | ".join(
    f"{p[:-2]} s (per batch)" for p in PHASES) + " |")
print("|---" * (5 + len(PHASES)) + "|")
for path in sys.argv[1:]:
    s = json.loads(Path(path).read_text(encoding="utf-8"))["sessions"][-1]
    ph, batches = s["phases"], s["machine_speed"]["samples"]
    cells = [f"{ph[p]:.1f} ({ph[p] / batches:.2f})" for p in PHASES]
    print(f"| {Path(path).name.removesuffix('-tuning.json')} | {s['builder_pool']} | "
          f"{s['trials_run']} | {batches} | {s['tuning_s']:.0f} | " + " | ".join(cells) + " |")
