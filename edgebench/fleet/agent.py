"""The fleet agent: one Ray actor per device, living on that device's node.

Everything that touches the device happens here, on the device: the variant probes, the
weights, the data (resolved and preprocessed into the device's own cache), conversion and
compilation (inside the cell worker), and the measurement itself (one worker process per
cell), through the same ``runner.Session`` that ``edgebench.full`` drives. The actor holds the
whole ``device:<id>`` resource and runs one call at a time, so two cells never overlap on a
device, and no second fleet run can measure on it meanwhile.

The session keeps this device's records in memory (seeded with its earlier records on
--resume): later cells take the parity verdict and the reference throughput sweep from
them. The driver owns the run's store.

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

    from ..util import REPO_ROOT

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
                 prior_records: list[dict], prior_models: dict, blobs: dict | None = None):
        self.removed_env = undo_ray_worker_env()
        from .. import runner, sysinfo
        from ..cell import RunSettings
        from ..util import REPO_ROOT

        self.device_id, self.run_id, self.settings, self.resource = device_id, run_id, settings, resource
        cache = Path(os.path.expanduser(settings.get("cache_dir") or REPO_ROOT / "results" / "cache"))
        self.cache = cache.resolve()
        self.workdir = self.cache / "fleet" / run_id / device_id
        prof = settings["prof"]
        self.ship_error = None
        options = dict(settings["options"])
        if settings.get("model_files"):      # models shipped by the driver, by content hash
            from ..models import MODEL_ARGS, ModelError
            from ..models.ship import unpack

            try:
                files = unpack(settings["model_files"], blobs or {}, self.cache / "shipped")
                options[MODEL_ARGS] = {**(options.get(MODEL_ARGS) or {}), "files": files}
            except (ModelError, OSError) as e:
                self.ship_error = f"model files: {e}"
        run_settings = RunSettings(
            run_id=run_id, profile=settings["profile"], prof=prof, cache_dir=str(self.cache),
            options=options, device=sysinfo.device(), device_id=device_id,
            parity_thresholds=settings["parity_thresholds"], env=settings.get("env") or {},
            memory_limit_mb=settings.get("cell_memory_limit"))
        self.session = runner.Session(
            run_settings, self.workdir / "logs",
            settings.get("cell_timeout") or prof["cell_timeout"],
            pythons=settings.get("pythons") or {}, records=prior_records)
        self.prior_models = prior_models or {}
        self.images = None

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

        from .. import sysinfo
        from ..data import DataError, resolve_source
        from ..models import ModelArgs, data_config

        self.removed_env += [k for k in undo_ray_worker_env() if k not in self.removed_env]
        session = self.session
        info = {"node": self.identity(), "machine": sysinfo.machine(),
                "device": session.settings.device,
                "device_state": sysinfo.device_state(), "env": sysinfo.env_flags(),
                "env_removed_from_ray_worker": self.removed_env,
                "ray_version": ray.__version__, "python_executable": sys.executable,
                "edgebench": _edgebench_version(),
                "cache_dir": str(self.cache), "workdir": str(self.workdir), "setup_error": None}
        if self.ship_error:
            info["setup_error"] = self.ship_error
            return info
        for v, path in session.pythons.items():
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
        self.images = images.limit(session.settings.prof["max_images"] if s.get("data") else None)
        info["data"] = {"source": self.images.name, "root": self.images.root,
                        "layout": self.images.layout, "n_images": len(self.images),
                        "license": self.images.license}
        t = time.perf_counter()
        margs = ModelArgs.from_options(session.settings.options)
        info["variants"] = session.probe(
            s["variants"], {m: tuple(data_config(m, margs)["input_size"]) for m in s["models"]})
        info["hello_timings"] = {"probe_s": round(time.perf_counter() - t, 3)}
        info["options"] = session.settings.options     # as the variants settled them here
        info["reference_parity"] = session.reference_computes_off_cpu()
        info["converter_import_errors"] = converters.broken()
        return info

    # ------------------------------------------------------------------ work
    def prepare(self, model: str) -> dict:
        """Weights and preprocessed data for ``model`` on this device. Returns
        {"model_info", "warnings"} or {"error"}."""
        from ..models import ModelError

        undo_ray_worker_env()
        try:
            info, warns = self.session.prepare(model, self.images, self.settings["weights"],
                                               self.settings["seed"],
                                               prior=self.prior_models.get(model))
        except (ModelError, ValueError, OSError) as e:
            return {"error": f"{type(e).__name__}: {e}"}
        return {"model_info": info, "warnings": warns}

    def run(self, model: str, variant: str, task: str) -> dict:
        """One cell, in its own worker process. Returns {"record", "log"}."""
        from ..cell import Cell

        undo_ray_worker_env()
        cell = Cell(model, variant, task)
        if model not in self.session.inputs:   # the driver prepares first; a direct call still works
            res = self.prepare(model)
            if "error" in res:
                raise RuntimeError(res["error"])
        log = self.session.log_dir / f"{cell.slug()}.log"
        log_start = log.stat().st_size if log.is_file() else 0
        rec = self.session.run(cell)
        rec["fleet"] = self.identity()
        text = ""
        if log.is_file():
            with open(log, "rb") as f:
                f.seek(log_start)
                text = f.read()[-LOG_RETURN_LIMIT:].decode(errors="replace")
        return {"record": rec, "log": text}
