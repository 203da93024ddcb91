"""The fleet agent: one Ray actor per device, living on that device's node.

Everything that touches the device happens here, on the device: the variant probes, the
weights, the data (resolved and preprocessed into the device's own cache), conversion and
compilation (inside the cell worker), and the measurement itself (one worker process per
cell, exactly as ``edgebench.full`` runs it, through ``runner.run_cell``). The actor holds the
whole ``device:<id>`` resource and runs one call at a time, so two cells never overlap on a
device, and no second fleet run can measure on it meanwhile.

The agent keeps a device-local results.jsonl (seeded with the device's earlier records on
--resume) because the worker reads it: parity before speed (``equivalent``) and the PyTorch
throughput sweep for BSR, both on the same device. The driver owns the run's real store.

This module imports nothing heavy at import time: the driver imports it to name the class.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

LOG_RETURN_LIMIT = 256 * 1024     # bytes of a cell's log sent back to the driver


def _parent_env_has(name: str) -> bool | None:
    """Whether the process that started this one (the raylet) has ``name`` set; None when
    that cannot be read."""
    try:
        raw = Path(f"/proc/{os.getppid()}/environ").read_bytes()
    except OSError:
        return None
    return any(e.startswith(name.encode() + b"=") for e in raw.split(b"\0"))


def undo_ray_worker_env() -> list[str]:
    """Ray sets OMP_NUM_THREADS (to 1 for an actor without CPUs) in its worker processes when
    the node's environment did not: cell workers would inherit it and measure single-threaded
    where ``edgebench.full`` would not. Remove what Ray added; keep what the node's operator
    set. (Ray 2.60 leaves CUDA_VISIBLE_DEVICES alone for a task that asks for no GPUs.)"""
    removed = []
    if "OMP_NUM_THREADS" in os.environ:
        had = _parent_env_has("OMP_NUM_THREADS")
        if had is False or (had is None and os.environ["OMP_NUM_THREADS"] == "1"):
            os.environ.pop("OMP_NUM_THREADS")
            removed.append("OMP_NUM_THREADS")
    return removed


def _edgebench_version() -> dict:
    """Which edgebench the device runs (each device has its own checkout)."""
    import subprocess
    from importlib import metadata

    from ..full import REPO_ROOT

    out: dict = {"root": str(REPO_ROOT)}
    try:
        out["version"] = metadata.version("edgebench")
    except metadata.PackageNotFoundError:
        out["version"] = None
    try:
        res = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        out["git_commit"] = res.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        out["git_commit"] = None
    return out


class DeviceAgent:
    """Wrapped with ``ray.remote`` by the driver and placed on the device's node."""

    def __init__(self, device_id: str, run_id: str, settings: dict, resource: str,
                 prior_records: list[dict], prior_models: dict):
        self.removed_env = undo_ray_worker_env()
        from .. import runner, store, sysinfo
        from ..full import REPO_ROOT

        self.device_id, self.run_id, self.settings, self.resource = device_id, run_id, settings, resource
        cache = Path(os.path.expanduser(settings.get("cache_dir") or REPO_ROOT / "results" / "cache"))
        self.cache = cache.resolve()
        self.workdir = self.cache / "fleet" / run_id / device_id
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        prof = settings["prof"]
        self.ctx = runner.RunContext(
            out=self.workdir, run_id=run_id, profile=settings["profile"], prof=prof,
            cache_dir=self.cache, cell_timeout=settings.get("cell_timeout") or prof["cell_timeout"],
            options=settings["options"], device=sysinfo.device(), device_id=device_id,
            parity_thresholds=settings["parity_thresholds"], pythons=settings.get("pythons") or {},
            env=settings.get("env") or {})
        # The worker looks up this device's earlier records (parity, the PyTorch sweep).
        self.ctx.results_path.write_text("")
        for r in prior_records:
            store.append(self.ctx.results_path, r)
        self.prior_models = prior_models or {}
        self.models: dict[str, dict] = {}
        self.images = None
        self.probes: dict = {}

    # ------------------------------------------------------------------ identity
    def identity(self) -> dict:
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(),
                "node_ip": ray.util.get_node_ip_address(), "hostname": socket.gethostname(),
                "resource": self.resource, "agent_pid": os.getpid()}

    def ping(self) -> dict:
        return self.identity()

    def hello(self) -> dict:
        """The device's machine info, collected here, and what can run here."""
        import converters
        import ray

        from .. import runner, sysinfo
        from ..data import DataError, resolve_source

        self.removed_env += [k for k in undo_ray_worker_env() if k not in self.removed_env]
        info = {"node": self.identity(), "machine": sysinfo.machine(), "device": self.ctx.device,
                "device_state": sysinfo.device_state(), "env": sysinfo.env_flags(),
                "env_removed_from_ray_worker": self.removed_env,
                "ray_version": ray.__version__, "python_executable": sys.executable,
                "edgebench": _edgebench_version(),
                "cache_dir": str(self.cache), "workdir": str(self.workdir), "setup_error": None}
        for v, path in self.ctx.pythons.items():
            if not os.access(path, os.X_OK):
                info["setup_error"] = f"pythons: {v} = '{path}' is not an executable interpreter here"
                return info
        s = self.settings
        try:
            images = resolve_source(s.get("data"), s.get("labels"))
        except DataError as e:
            info["setup_error"] = f"data: {e}"
            return info
        if not len(images):
            info["setup_error"] = f"data: no image files found in {s.get('data')}"
            return info
        t = time.perf_counter()
        self.ctx.options = runner.resolve_torch_device(self.ctx.options, self.ctx.pythons)
        info["torch_device"] = self.ctx.options.get("torch_device")
        info["hello_timings"] = {"torch_device_s": round(time.perf_counter() - t, 3)}
        self.images = images.limit(self.ctx.prof["max_images"] if s.get("data") else None)
        info["data"] = {"source": self.images.name, "root": self.images.root,
                        "layout": self.images.layout, "n_images": len(self.images),
                        "license": self.images.license}
        t = time.perf_counter()
        self.probes = runner.probe_variants(s["variants"], self.ctx, self.workdir / "logs")
        info["hello_timings"]["probe_s"] = round(time.perf_counter() - t, 3)
        info["variants"] = self.probes
        info["converter_import_errors"] = converters.broken()
        return info

    # ------------------------------------------------------------------ work
    def prepare(self, model: str) -> dict:
        """Weights and preprocessed data for ``model`` on this device. Returns
        {"model_info", "warnings"} or {"error"}."""
        from ..models import ModelError

        undo_ray_worker_env()
        from ..runner import prepare_model_context

        try:
            ctx, info, warns = prepare_model_context(
                model, self.images, self.cache, self.settings["weights"], self.settings["seed"],
                prior=self.prior_models.get(model))
        except (ModelError, ValueError, OSError) as e:
            return {"error": f"{type(e).__name__}: {e}"}
        self.models[model] = ctx
        return {"model_info": info, "warnings": warns}

    def run(self, model: str, variant: str, task: str) -> dict:
        """One cell, in its own worker process. Returns {"record", "log"}."""
        from .. import runner, store
        from ..plan import CellId

        undo_ray_worker_env()
        cell = CellId(model, variant, task)
        model_ctx = self.models.get(model)
        if model_ctx is None:   # the driver prepares first; a direct call still works
            res = self.prepare(model)
            if "error" in res:
                raise RuntimeError(res["error"])
            model_ctx = self.models[model]
        log = self.workdir / "logs" / f"{cell.slug()}.log"
        log_start = log.stat().st_size if log.is_file() else 0
        pr = self.probes.get(variant, {"ok": True})
        if not pr["ok"]:
            rec = runner.skipped_record(cell, model_ctx, self.ctx, pr["reason"])
        else:
            rec = runner.run_cell(cell, model_ctx, self.ctx, self.workdir / "logs")
        rec["device_id"] = self.device_id
        rec["fleet"] = self.identity()
        store.append(self.ctx.results_path, rec)
        text = ""
        if log.is_file():
            with open(log, "rb") as f:
                f.seek(log_start)
                text = f.read()[-LOG_RETURN_LIMIT:].decode(errors="replace")
        return {"record": rec, "log": text}
