"""Is a PyTorch cell's speed a property of its process, or of the fork server it was forked
from? Runs the same latency cell (mobilenetv2_100, pytorch, quick profile) K times in each of
S sessions (one fork server per session; each cell its own forked child), and the same with
--isolation spawn (a fresh interpreter per cell). If cells forked from one server agree with
each other but servers differ, the between-server share of the variance is large, and two
runs (two servers) can differ by more than the cells of one run suggest.

    .venv/bin/python benchmarks/fork_server_noise.py [--sessions 3] [--cells 3]

Prints per-session p50s and the variance split (within sessions / between sessions)."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edgebench import runner, sysinfo  # noqa: E402
from edgebench.cell import Cell, RunSettings  # noqa: E402
from edgebench.data import resolve_source  # noqa: E402
from edgebench.profiles import PROFILES  # noqa: E402
from edgebench.util import REPO_ROOT  # noqa: E402


def session_p50s(model: str, variant: str, isolation: str, cells: int, tmp: Path) -> list[float]:
    settings = RunSettings(run_id="noise", profile="quick", prof=PROFILES["quick"],
                           cache_dir=str(REPO_ROOT / "results" / "cache"),
                           options={"torch_device": "cpu"}, device=sysinfo.device())
    s = runner.Session(settings, tmp / "logs", cell_timeout=300, isolation=isolation)
    try:
        s.probe([variant], {model: (3, 224, 224)})
        s.prepare(model, resolve_source(None), "random", 0)
        out = []
        for _ in range(cells):
            rec = s.run(Cell(model, variant, "latency"))
            out.append(float(rec["latency_ms"]["p50"]) if rec["status"] == "ok" else float("nan"))
        return out
    finally:
        s.close()


def split(groups: list[list[float]]) -> dict:
    """Variance of ln(p50) within sessions and between session means (one-way ANOVA)."""
    logs = [np.log(g) for g in groups]
    within = float(np.mean([np.var(g, ddof=1) for g in logs]))
    k = len(logs[0])
    between_means = float(np.var([g.mean() for g in logs], ddof=1))
    between = max(between_means - within / k, 0.0)    # the session component's variance
    return {"sd_within": np.sqrt(within), "sd_between_sessions": np.sqrt(between)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mobilenetv2_100")
    ap.add_argument("--variant", default="pytorch")
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--cells", type=int, default=3)
    ap.add_argument("--isolation", nargs="+", default=["fork", "spawn"])
    args = ap.parse_args()
    result = {}
    with tempfile.TemporaryDirectory() as t:
        for iso in args.isolation:
            groups = []
            for i in range(args.sessions):
                g = session_p50s(args.model, args.variant, iso, args.cells, Path(t) / f"{iso}{i}")
                print(f"{iso} session {i}: p50 ms " + " ".join(f"{v:.2f}" for v in g), flush=True)
                groups.append(g)
            sp = split(groups)
            print(f"{iso}: sd of ln p50 within a session {100 * sp['sd_within']:.1f}%, "
                  f"between sessions {100 * sp['sd_between_sessions']:.1f}%", flush=True)
            result[iso] = {"p50_ms": groups, **{k: round(float(v), 4) for k, v in sp.items()}}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
