"""Runs cells on this machine: one worker process per cell, with a timeout.

``Session`` is the one run loop's engine, used by ``edgebench.full`` and by each fleet agent
on its device: it asks every variant once (in a throwaway process per interpreter) whether
and where it can run, prepares each model's weights and data once, decides the cells that
cannot run without starting a process, and hands every other cell to a worker together with
what earlier cells decided (the parity verdict, the reference throughput sweep). It keeps
those earlier records in memory; the caller owns the result store.

The status rules (which cells a resumed run skips, the exit code) are here too, once.

Backend-agnostic: it knows variant names and the converter protocol, nothing else.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Iterable

from . import store
from .cell import Cell, ModelInputs, RunSettings, new_record, now_iso
from .errors import EXIT_CELLS_FAILED, EXIT_OK
from .plan import LAYERS_TASK, SCENARIO_TASKS
from .process import ForkServer, ServerDied, failure_reason, log_tail, partial_record, spawn

PROBE_TIMEOUT_S = 300
# The fork server's branch that probes: it imports no variant's modules (the probe imports
# every variant's runtime; no cell forks from it).
PROBE_BRANCH = "(probe)"


# ----------------------------------------------------------------------------- status rules

def done_keys(records: Iterable[dict]) -> set[tuple]:
    """Cells a resumed run does not run again: those whose latest record is ``ok``."""
    return {k for k, r in store.latest(records).items() if r["status"] == "ok"}


def exit_code(records: Iterable[dict], planned: set[tuple]) -> int:
    """1 when a planned cell's latest record failed or timed out, else 0."""
    latest = store.latest(records)
    bad = any(latest[k]["status"] in ("failed", "timeout") for k in planned if k in latest)
    return EXIT_CELLS_FAILED if bad else EXIT_OK


# ----------------------------------------------------------------------------- the session

ISOLATION = ("fork", "spawn")


class Session:
    """``isolation``: "fork" (default) starts each cell's process from a fork server that has
    imported the heavy modules once; "spawn" starts a new interpreter per cell. Either way a
    cell has a process of its own. Use as a context manager, or call ``close()``."""

    def __init__(self, settings: RunSettings, log_dir: Path, cell_timeout: float,
                 pythons: dict | None = None, records: Iterable[dict] = (),
                 isolation: str = "fork"):
        if isolation not in ISOLATION:
            raise ValueError(f"isolation must be one of {ISOLATION}, not {isolation!r}")
        self.isolation = isolation
        self._servers: dict[str, ForkServer | None] = {}
        self.settings = settings
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.cell_timeout = cell_timeout
        self.pythons = dict(pythons or {})       # variant -> interpreter (--python)
        self.records: list[dict] = list(records)  # this device's records so far (resume too)
        self.probes: dict[str, dict] = {}
        self.inputs: dict[str, ModelInputs] = {}
        self.timings = {"probe_s": 0.0, "prepare_s": 0.0, "fork_server_s": 0.0}

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for server in self._servers.values():
            if server is not None:
                server.close()
        self._servers.clear()

    # -- once per run ----------------------------------------------------------------------
    def probe(self, variants: list[str], models: dict[str, tuple]) -> dict[str, dict]:
        """Ask each variant whether it can run here, which options it settles here (e.g. the
        PyTorch device) and which of ``models`` (name -> input size) it can take."""
        t = time.perf_counter()
        server_s = self.timings["fork_server_s"]     # a server started here is its own item
        by_python: dict[str, list[str]] = {}
        for v in variants:
            by_python.setdefault(self.pythons.get(v, sys.executable), []).append(v)
        for python, group in by_python.items():
            res = self._probe(group, python, models, self.log_dir / "probe.log")
            crashed = [v for v in group if res[v].get("crashed")]
            if crashed and len(group) > 1:   # one variant's crash must not hide the others
                for v in crashed:
                    res.update(self._probe([v], python, models, self.log_dir / f"probe__{v}.log"))
            self.probes.update(res)
        settled, env = {}, {}
        for v in variants:
            settled.update(self.probes[v].get("settled", {}))
            env.update(self.probes[v].get("worker_env", {}))
        # The run's own env settings (a fleet config's) win over what a variant asks for.
        self.settings = dataclasses.replace(
            self.settings, options={**self.settings.options, **settled},
            env={**env, **self.settings.env})
        self.timings["probe_s"] += round(time.perf_counter() - t - (
            self.timings["fork_server_s"] - server_s), 3)
        return self.probes

    def _probe(self, variants, python, models, log: Path) -> dict[str, dict]:
        with tempfile.TemporaryDirectory(prefix="edgebench-probe-") as td:
            req, res = Path(td) / "probe-in.json", Path(td) / "probe.json"
            req.write_text(json.dumps({"variants": variants, "options": self.settings.options,
                                       "cache_dir": self.settings.cache_dir,
                                       "models": {m: list(s) for m, s in models.items()}}), encoding="utf-8")
            argv = ["--probe", str(req), str(res)]
            # Forked from the fork server (torch and timm imported once for the probe and the
            # cells); spawned where there is none, or where the
            # forked probe failed (a crash then costs one more probe, never a wrong answer).
            # A forked probe that timed out is not tried again: a hang would hang twice.
            rc = -1
            server = self._server(python)
            if server is not None:
                try:
                    rc, _ = server.run(argv, log, PROBE_TIMEOUT_S, PROBE_BRANCH,
                                       env=self.settings.env)
                except OSError:                 # the server died: as for a cell
                    server.close()
                if rc == 0 and res.is_file():
                    return json.loads(res.read_text(encoding="utf-8"))
                res.unlink(missing_ok=True)
            if rc is not None:
                rc, _ = spawn([python, "-m", "edgebench.worker", *argv],
                              log, PROBE_TIMEOUT_S, self.settings.env)
            if res.is_file():
                return json.loads(res.read_text(encoding="utf-8"))
        why = "timed out" if rc is None else f"exit code {rc}"
        return {v: {"ok": False, "crashed": True, "versions": {}, "models": {},
                    "reason": f"availability probe {why}: {log_tail(log)}"} for v in variants}

    def reference_computes_off_cpu(self) -> bool:
        """Whether the reference variant computes off the CPU (then it gets a parity cell)."""
        # Unavailable there too (e.g. --torch-device cuda without a GPU): its parity cell is
        # then planned and recorded as skipped with the reason, like its other cells.
        pr = self.probes.get(self.settings.reference_variant, {})
        return pr.get("compute_device", "cpu") != "cpu"

    # -- once per model --------------------------------------------------------------------
    def prepare(self, model: str, images, weights_policy: str, seed: int,
                prior: dict | None = None, progress=None,
                calibration=None, facts: dict | None = None) -> tuple[dict, list[str]]:
        """Weights and the preprocessed data folder for ``model``. Returns (model_info for
        run.json, warnings); ``prior`` (the model's entry in run.json on --resume) keeps the
        weights the run started with. ``calibration``: the INT8 calibration images
        (``edgebench.data.calibration.choose``), preprocessed here like the data. ``facts``:
        ``edgebench.models.describe``'s, when the caller already has them (the CLI's checks).
        Raises ModelError (weights) or ValueError (no image, data of another class count)."""
        from .data import prepare_checked
        from .models import ModelArgs, canonical_onnx, data_config, describe, resolve_weights

        t = time.perf_counter()
        margs = ModelArgs.from_options(self.settings.options)
        if prior and prior.get("weights"):
            weights, note = prior["weights"], prior.get("weights_note", "")
        else:
            weights, note = resolve_weights(model, weights_policy, seed, margs)
        model_info = dict(facts) if facts else describe(model, weights, margs)
        if model_info.get("kind") == "onnx":
            model_info["onnx_canonical"] = canonical_onnx(model, model_info, margs,
                                                          Path(self.settings.cache_dir))
        images, model_info["labels"] = self._labels_for(images, model_info.get("num_classes"))
        model_info["data_classes"] = images.n_classes
        cfg = data_config(model, margs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            folder, rebuilt = prepare_checked(images, cfg, Path(self.settings.cache_dir),
                                              progress=progress)
        dmeta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        n_ready = len(dmeta["labels"])
        if n_ready == 0:
            raise ValueError(f"no readable images in {images.root}")
        data_info = {"source": images.name, "n_images": n_ready,
                     "skipped_images": len(dmeta["skipped"]), "preprocess": dmeta["config"]}
        info = {"weights": weights, "weights_note": note, "model_info": model_info,
                "preprocess": {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
                "skipped_images": dmeta["skipped"]}
        if rebuilt:   # the cached images failed their sha256 check: every record says so
            data_info["cache_rebuilt"] = info["data_cache_rebuilt"] = rebuilt
        calib = None
        # Only where a variant that calibrates can run here (tensorrt-int8 is planned in
        # every default run, and skipped without TensorRT).
        if calibration is not None and any(p.get("ok") and p.get("needs_calibration")
                                           for p in self.probes.values()):
            calib = self._calibration(calibration, cfg, progress)
            info["int8_calibration"] = {k: v for k, v in calib.items()
                                        if k not in ("folder", "mean", "std")}
        self.inputs[model] = ModelInputs(
            weights=weights, weights_note=note, data_folder=str(folder),
            mean=tuple(cfg["mean"]), std=tuple(cfg["std"]), parity_images=n_ready,
            data_info=data_info, calibration=calib, model_info=model_info)
        self.timings["prepare_s"] += round(time.perf_counter() - t, 3)
        return info, [str(w.message) for w in caught]

    @staticmethod
    def _labels_for(images, num_classes: int | None):
        """The images labelled for a model of ``num_classes`` classes, and how. Given data of
        another class count is an error (ValueError naming both); the bundled sample's
        ImageNet labels simply do not apply to such a model (its accuracy says so)."""
        from .data import DataError

        try:
            return images.for_model(num_classes)
        except DataError:
            if images.name != "sample":
                raise
        return (dataclasses.replace(images, labels=[-1] * len(images), folder_labels=None),
                f"none: the bundled sample's ImageNet labels do not apply to a "
                f"{num_classes}-class model")

    def _calibration(self, images, cfg: dict, progress=None) -> dict:
        """The calibration images preprocessed with the model's own transform, and the facts
        every INT8 record carries about them."""
        import converters

        from .data import prepare_checked
        from .data.calibration import files_hash

        folder, _ = prepare_checked(images, cfg, Path(self.settings.cache_dir), progress=progress)
        n = len(json.loads((folder / "meta.json").read_text(encoding="utf-8"))["labels"])
        if n == 0:
            raise ValueError(f"no readable calibration images in {images.root}")
        # the converter says how it calibrates (the core names no backend)
        calibrating = next(v for v, p in self.probes.items()
                           if p.get("ok") and p.get("needs_calibration"))
        facts = converters.get(calibrating).calibration_facts(str(folder),
                                                              self.settings.options)
        return {"folder": str(folder), "mean": list(cfg["mean"]), "std": list(cfg["std"]),
                "n": n, **facts, "source": images.name, "root": images.root,
                "files_sha256": files_hash(images)}

    # -- once per cell ---------------------------------------------------------------------
    def fill(self, cell: Cell) -> Cell:
        """The cell with the run's settings, its model's inputs and what earlier cells
        decided: everything its worker needs."""
        ref = self.settings.reference_variant
        filled = cell.with_(run=self.settings, inputs=self.inputs.get(cell.model))
        if cell.task == "parity":
            return filled
        cost = None
        if cell.variant == ref:
            eq, why = True, "the reference"
        else:
            p = self._latest(cell.model, cell.variant, "parity")
            cost = (p or {}).get("int8_cost")
            if p is None or p["status"] not in ("ok", "failed", "partial"):
                eq, why = None, "parity not run"
            else:
                eq, why = p["status"] != "failed", p.get("criterion") or p.get("reason", "")
        sweep = None
        if cell.task == "throughput" and cell.variant != ref:
            r = self._latest(cell.model, ref, "throughput")
            sweep = r.get("by_batch") if r else None
        seed = None
        if cell.task in SCENARIO_TASKS:      # LoadGen's expected latency/QPS, offline batch
            from .mlperf.settings import seed_figures

            seed = seed_figures(self._latest(cell.model, cell.variant, "latency"),
                                self._latest(cell.model, cell.variant, "throughput"))
        p50 = None
        if cell.task == LAYERS_TASK:      # what the profile's total is checked against
            lat = self._latest(cell.model, cell.variant, "latency")
            if lat and lat["status"] in ("ok", "partial"):
                p50 = (lat.get("latency_ms") or {}).get("p50")
        return filled.with_(equivalent=eq, equivalence=why, reference_sweep=sweep,
                            int8_cost=cost, mlperf_seed=seed, latency_p50_ms=p50)

    def _latest(self, model: str, variant: str, task: str) -> dict | None:
        return store.find(self.records, model, variant, task, self.settings.device_id,
                          self.settings.power_mode)

    def skip_reason(self, cell: Cell) -> str:
        """Why ``cell`` cannot run here ("" when it can), decided without a worker."""
        pr = self.probes.get(cell.variant)
        if pr is None:
            return ""
        if not pr["ok"]:
            return pr["reason"]
        why = pr.get("models", {}).get(cell.model, "")
        info = (self.inputs[cell.model].model_info or {}) if cell.model in self.inputs else {}
        if not why and cell.task == "accuracy" and info and info.get("num_classes") is None:
            shapes = ", ".join(f"{o['name']} {o['shape']}" for o in info.get("outputs", []))
            why = ("Top-1/Top-5 apply to one [batch, classes] output; this model gives "
                   f"{shapes or 'another kind of output'}")
        return why

    def run(self, cell: Cell) -> dict:
        """Run one cell and return its record (never raises for the cell's own failure)."""
        filled = self.fill(cell)
        if filled.inputs is None:
            raise RuntimeError(f"{cell.model}: prepare() was not called before its cells")
        why = self.skip_reason(cell)
        rec = new_record(filled, "skipped", why) if why else self._execute(filled)
        self.records.append(rec)
        return rec

    def _execute(self, cell: Cell) -> dict:
        log = self.log_dir / f"{cell.slug()}.log"
        with tempfile.TemporaryDirectory(prefix="edgebench-cell-") as td:
            cfile, rfile = Path(td) / "cell.json", Path(td) / "record.json"
            cfile.write_text(json.dumps(cell.to_json()), encoding="utf-8")
            python = self.pythons.get(cell.variant, sys.executable)
            started = now_iso()
            server = self._server(python)
            rc, died = None, ""
            if server is not None:
                try:
                    rc, wall = server.run([str(cfile), str(rfile)], log, self.cell_timeout,
                                          cell.variant, self._compile_group(cell),
                                          env=self.settings.env)
                except ServerDied as e:  # mid-cell: the cell ended with it; said as such
                    server.close()
                    died, wall = str(e), e.wall_s
                except OSError:        # it died before the cell started: spawn this cell
                    server.close()
                    server = None
            if server is None:
                rc, wall = spawn([python, "-m", "edgebench.worker", str(cfile), str(rfile)],
                                 log, self.cell_timeout, self.settings.env)
            if rc == 0 and rfile.is_file():
                rec = json.loads(rfile.read_text(encoding="utf-8"))
                rec["process_s"] = round(max(wall - rec.get("wall_s", 0.0), 0.0), 3)
                return rec
            status, reason = ("failed", died) if died else \
                failure_reason(rc, self.cell_timeout, log)
            # What it measured before it died (the OOM killer's SIGKILL at a large batch)
            # stays: the throughput search writes its record as it goes.
            part = partial_record(rfile, reason)
            if part is not None:
                return dict(part, process_s=round(max(wall - part.get("wall_s", 0.0), 0.0), 3))
        return new_record(cell, status, reason, started_at=started, wall_s=round(wall, 3))

    def _compile_group(self, cell: Cell) -> str:
        """The group whose model the fork server compiles once for ``cell`` ("" for none):
        JIT variants on the CPU (the probe's ``compile_in_branch``), unless each cell's
        memory is capped (the cap is set in the cell's process; a model compiled before it
        would escape it), or unless EDGEBENCH_COMPILE_ONCE=0 (each cell then traces and
        compiles again, its kernels from inductor's cache, as before this existed)."""
        probe = self.probes.get(cell.variant) or {}
        if not probe.get("compile_in_branch") or self.settings.memory_limit_mb:
            return ""
        if os.environ.get("EDGEBENCH_COMPILE_ONCE", "1") == "0":   # off: each cell compiles
            return ""
        return cell.compile_group()

    def _server(self, python: str) -> ForkServer | None:
        """The fork server for ``python`` (started on first use; again if it died), or None
        to spawn (isolation "spawn", or a server that cannot start: said in its log)."""
        if self.isolation != "fork":
            return None
        server = self._servers.get(python)
        if server is not None and server.alive():
            return server
        if python in self._servers and server is None:
            return None                      # it could not start before: spawn from now on
        t = time.perf_counter()
        try:
            server = ForkServer(python, self.log_dir / "forkserver.log", self.settings.env)
        except OSError:
            server = None
        self._servers[python] = server
        self.timings["fork_server_s"] += round(time.perf_counter() - t, 3)
        return server
