"""Runs the plan: one worker process per cell, with a timeout, resume and a progress display.

Backend-agnostic: it only knows variant names, and asks each variant once (in a throwaway
process) whether it can run here."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from .plan import REFERENCE_VARIANT, CellId

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class RunContext:
    out: Path
    run_id: str
    profile: str
    prof: dict
    cache_dir: Path
    cell_timeout: float
    options: dict
    device: dict
    device_id: str = ""
    parity_thresholds: dict = dataclasses.field(default_factory=dict)
    pythons: dict = dataclasses.field(default_factory=dict)   # variant -> interpreter
    env: dict = dataclasses.field(default_factory=dict)

    @property
    def results_path(self) -> Path:
        return self.out / "results.jsonl"


def prepare_model_context(model: str, images, cache: Path, weights_policy: str, seed: int,
                          prior: dict | None = None, progress=None) -> tuple[dict, dict, list[str]]:
    """What a model's cells share, built once per model before they run (by ``edgebench.full``
    and by each fleet agent on its device): resolved weights, the preprocessed data folder and
    its description. Returns (model_ctx, model_info, warnings); ``prior`` (the model's entry
    in run.json on --resume) keeps the weights the run started with.
    Raises ModelError (weights) or ValueError (no readable image)."""
    from .data import prepare
    from .models import data_config, resolve_weights

    if prior and prior.get("weights"):
        weights, note = prior["weights"], prior.get("weights_note", "")
    else:
        weights, note = resolve_weights(model, weights_policy, seed)
    cfg = data_config(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        folder = prepare(images, cfg, cache, progress=progress)
    dmeta = json.loads((folder / "meta.json").read_text())
    n_ready = len(dmeta["labels"])
    if n_ready == 0:
        raise ValueError(f"no readable images in {images.root}")
    model_ctx = {"weights": weights, "weights_note": note, "data_folder": str(folder),
                 "mean": list(cfg["mean"]), "std": list(cfg["std"]), "parity_images": n_ready,
                 "data_info": {"source": images.name, "n_images": n_ready,
                               "skipped_images": len(dmeta["skipped"]),
                               "preprocess": dmeta["config"]}}
    info = {"weights": weights, "weights_note": note,
            "preprocess": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
            "skipped_images": dmeta["skipped"]}
    return model_ctx, info, [str(w.message) for w in caught]


def resolve_torch_device(options: dict, pythons: dict) -> dict:
    """``torch_device: auto`` -> "cuda" when torch sees a GPU, else "cpu", asked of the
    interpreter the pytorch variant will run in (its own, with --python pytorch=...). Run on
    the machine that runs the cells: edgebench.full here, each fleet agent on its device."""
    if options.get("torch_device") != "auto":
        return options
    if "pytorch" not in pythons:          # this interpreter: it imports torch (timm) anyway
        try:
            import torch

            cuda = torch.cuda.is_available()
        except Exception:  # noqa: BLE001 - no usable torch here: the pytorch probe says why
            cuda = False
    else:
        code = "import torch; print(torch.cuda.is_available())"
        try:
            res = subprocess.run([pythons["pytorch"], "-c", code], capture_output=True,
                                 text=True, timeout=300)
            cuda = res.stdout.strip().endswith("True")
        except (OSError, subprocess.SubprocessError):
            cuda = False
    return {**options, "torch_device": "cuda" if cuda else "cpu"}


def _python_for(ctx: RunContext, variant: str) -> str:
    return ctx.pythons.get(variant, sys.executable)


def _worker_env(ctx: RunContext) -> dict:
    env = dict(os.environ)
    # A variant's own interpreter (e.g. a separate JAX venv) still imports this checkout.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Weights were resolved (and downloaded, if at all) by the main process: never fetch here.
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _spawn(cmd: list[str], ctx: RunContext, log: Path, timeout: float):
    """Run a worker in its own process group; kill the whole group on timeout.
    Returns (returncode or None on timeout, seconds)."""
    t = time.perf_counter()
    with open(log, "ab") as lf:
        proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, env=_worker_env(ctx),
                                cwd=REPO_ROOT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
            _kill_group(proc)
        except BaseException:
            _kill_group(proc)
            raise
    return rc, time.perf_counter() - t


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _log_tail(log: Path, n: int = 6) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[-800:]


def _probe(variants: list[str], python: str, ctx: RunContext, log: Path) -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as td:
        res, opts = Path(td) / "probe.json", Path(td) / "opts.json"
        opts.write_text(json.dumps(ctx.options))
        cmd = [python, "-m", "edgebench.worker", "--probe", ",".join(variants), str(res), str(opts)]
        rc, _ = _spawn(cmd, ctx, log, timeout=300)
        if res.is_file():
            return json.loads(res.read_text())
    why = "timed out" if rc is None else f"exit code {rc}"
    return {v: {"ok": False, "reason": f"availability probe {why}: {_log_tail(log)}", "versions": {}}
            for v in variants}


def probe_variants(variants: list[str], ctx: RunContext, log_dir: Path) -> dict[str, dict]:
    """Ask each variant whether it can run here, in throwaway processes: one per interpreter,
    and one per variant again if that shared probe itself crashed."""
    out: dict[str, dict] = {}
    by_python: dict[str, list[str]] = {}
    for v in variants:
        by_python.setdefault(_python_for(ctx, v), []).append(v)
    for python, group in by_python.items():
        res = _probe(group, python, ctx, log_dir / "probe.log")
        crashed = [v for v in group if res[v]["reason"].startswith("availability probe")]
        if crashed and len(group) > 1:
            for v in crashed:
                res.update(_probe([v], python, ctx, log_dir / f"probe__{v}.log"))
        out.update(res)
    return out


def _failure_reason(rc: int | None, timeout: float, log: Path) -> tuple[str, str]:
    if rc is None:
        return "timeout", f"cell exceeded --cell-timeout {timeout:g} s and was killed"
    if rc < 0:
        sig = signal.Signals(-rc).name
        hint = " (the kernel's OOM killer sends SIGKILL: likely out of memory)" if rc == -9 else ""
        return "failed", f"worker killed by {sig}{hint}; log: {_log_tail(log)}"
    return "failed", f"worker exited with code {rc} without a result; log: {_log_tail(log)}"


def run_cell(cell: CellId, model_ctx: dict, ctx: RunContext, log_dir: Path) -> dict:
    """Run one cell in a worker process and return its record (never raises for the cell's
    own failure)."""
    payload = {
        "run_id": ctx.run_id, "model": cell.model, "variant": cell.variant, "task": cell.task,
        "device": ctx.device, "device_id": ctx.device_id, "profile": ctx.profile, "prof": ctx.prof,
        "options": ctx.options, "cache_dir": str(ctx.cache_dir),
        "results_path": str(ctx.results_path), "parity_thresholds": ctx.parity_thresholds,
        "reference_variant": REFERENCE_VARIANT, "env": ctx.env, **model_ctx,
    }
    log = log_dir / f"{cell.slug()}.log"
    with tempfile.TemporaryDirectory(prefix="edgebench-cell-") as td:
        cfile, rfile = Path(td) / "cell.json", Path(td) / "record.json"
        cfile.write_text(json.dumps(payload))
        cmd = [_python_for(ctx, cell.variant), "-m", "edgebench.worker", str(cfile), str(rfile)]
        started = time.time()
        rc, wall = _spawn(cmd, ctx, log, ctx.cell_timeout)
        if rc == 0 and rfile.is_file():
            return json.loads(rfile.read_text())
        status, reason = _failure_reason(rc, ctx.cell_timeout, log)
    return {"run_id": ctx.run_id, "model": cell.model, "variant": cell.variant, "task": cell.task,
            "status": status, "reason": reason, "device": ctx.device, "device_id": ctx.device_id,
            "weights": model_ctx["weights"], "weights_note": model_ctx["weights_note"],
            "data": model_ctx["data_info"], "profile": ctx.profile,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started)),
            "wall_s": round(wall, 3), "memory_mb": None, "power_w": None,
            "power_reason": "cell did not finish", "energy_mj_per_sample": None}


def skipped_record(cell: CellId, model_ctx: dict, ctx: RunContext, reason: str) -> dict:
    return {"run_id": ctx.run_id, "model": cell.model, "variant": cell.variant, "task": cell.task,
            "status": "skipped", "reason": reason, "device": ctx.device, "device_id": ctx.device_id,
            "weights": model_ctx["weights"], "weights_note": model_ctx["weights_note"],
            "data": model_ctx["data_info"], "profile": ctx.profile,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "wall_s": 0.0,
            "memory_mb": None, "power_w": None, "power_reason": "not run",
            "energy_mj_per_sample": None}
