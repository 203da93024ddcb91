"""The fleet driver: one agent per device, each device's cells in plan order, records
streamed into one run directory as they finish.

Per device the driver walks a small state machine:

    waiting  -- no live Ray node has the device's resource yet; polled until --device-wait
    starting -- the agent actor was created on the device's node; waiting for it to answer
    hello    -- the agent collects machine info and probes the variants on the device
    running  -- prepare(model), then run(cell) for each of that model's cells, one call at
                a time (ray.wait over all devices, so devices run side by side)
and ends in one of
    done         all its cells have a record
    absent       no node had the resource within --device-wait: its cells are recorded as
                 "skipped", reason "device absent: ..."
    lost         its node or agent died (or stopped answering): the cell that was running
                 and the cells not yet started are recorded as "failed", reason
                 "device <id> lost: ..."; the cells it finished are kept
    setup-failed its data or interpreters are unusable there: cells "failed" with the reason
Every one of those records is not "ok", so ``--resume`` runs exactly those cells again.
"""
from __future__ import annotations

import dataclasses
import math
import re
import time
from pathlib import Path

from rich.markup import escape

from .. import store
from ..cell import Cell, ModelInputs, RunSettings, new_record, now_iso
from ..plan import build
from ..util import atomic_write_json, first_line
from .cluster import resources_present
from .config import Device, FleetConfig

PING_SLACK_S = 120.0        # a present device's agent must answer within --device-wait + this
HELLO_DEADLINE_S = 1800.0   # machine info + variant probes (each probe has its own 300 s limit)
PREPARE_DEADLINE_S = 6 * 3600.0   # weights + preprocessing a full ImageNet val on a small board
CELL_SLACK_S = 600.0        # a cell's call may take its cell timeout plus this


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _last_line(e: BaseException, limit: int = 400) -> str:
    """The exception line at the end of a traceback Ray forwards as text."""
    lines = [ln.strip() for ln in _ANSI.sub("", str(e)).splitlines() if ln.strip()]
    return (lines[-1] if lines else type(e).__name__)[:limit]


def _why_lost(e: BaseException) -> str:
    """Ray's ActorDiedError puts the cause on a later line ("The actor died because ...")."""
    lines = [ln.strip() for ln in _ANSI.sub("", str(e)).splitlines() if ln.strip()]
    why = next((ln for ln in lines if "died because" in ln or "node" in ln.lower() and "died" in ln),
               None)
    return f"{type(e).__name__}: {why}"[:400] if why else first_line(_ANSI.sub("", str(e)))


@dataclasses.dataclass
class _Dev:
    spec: Device
    steps: list                      # [("prepare", model) | ("cell", CellId)]
    state: str = "waiting"
    actor: object = None
    ref: object = None
    step: tuple | None = None
    deadline: float = math.inf
    node: dict | None = None
    device: dict | None = None
    reason: str = ""
    t_call: float = 0.0
    timings: dict = dataclasses.field(default_factory=lambda: {"prepare_s": {}, "cells": {}})

    @property
    def id(self) -> str:
        return self.spec.id


class Driver:
    def __init__(self, fcfg: FleetConfig, out: Path, run_id: str, meta: dict, console,
                 device_wait: float, done: set, prior_records: list[dict]):
        self.fcfg, self.out, self.run_id, self.meta, self.console = fcfg, out, run_id, meta, console
        self.device_wait = device_wait
        self.done = done
        self.results = out / "results.jsonl"
        self.devs: list[_Dev] = []
        for d in fcfg.devices.values():
            steps = self._steps(d.id, d.cells)
            dev = _Dev(d, steps, state="waiting" if steps else "done")
            self.devs.append(dev)
            entry = meta["devices"].setdefault(d.id, {"status": "not contacted"})
            entry["resource"] = d.resource
            entry.setdefault("models", {})
            if not steps:
                self.console.print(f"[dim]device {d.id}: every cell already ok, not contacted[/]")
        self.prior = {d.id: [r for r in prior_records if r.get("device_id") == d.id]
                      for d in fcfg.devices.values()}

    # ------------------------------------------------------------------ records
    def write_meta(self) -> None:
        atomic_write_json(self.out / "run.json", self.meta, indent=2)   # a crash must not lose it

    def _weights_of(self, d: _Dev, model: str) -> tuple[str, str]:
        info = self.meta["devices"][d.id]["models"].get(model)
        if info:
            return info["weights"], info["weights_note"]
        policy, seed = d.spec.settings["weights"], d.spec.settings["seed"]
        if policy == "random":
            from ..models import random_weights

            return random_weights(model, seed), "not resolved on the device"
        return policy, "not resolved on the device"

    def _record(self, d: _Dev, cell: Cell, status: str, reason: str) -> dict:
        """The record of a cell the device did not run (absent, lost, setup failed)."""
        weights, note = self._weights_of(d, cell.model)
        s = d.spec.settings
        run = RunSettings(run_id=self.run_id, profile=s["profile"], prof=s["prof"],
                          cache_dir=s.get("cache_dir") or "", options=s["options"],
                          device=d.device or self.meta["devices"][d.id].get("device")
                          or {"kind": "unknown", "name": d.id}, device_id=d.id)
        return new_record(cell.with_(run=run, inputs=ModelInputs(weights, note)), status, reason,
                          fleet={**(d.node or {"node_id": None, "hostname": None, "node_ip": None}),
                                 "resource": d.spec.resource, "recorded_by": "driver"})

    def _emit(self, d: _Dev, rec: dict, log: str = "") -> None:
        from ..report import one_line

        store.append(self.results, rec)
        if log:
            ldir = self.out / "logs" / d.id
            ldir.mkdir(parents=True, exist_ok=True)
            log_path = ldir / f"{rec['model']}__{rec['variant']}__{rec['task']}.log"
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(log)
        colour = {"ok": "green", "skipped": "yellow", "partial": "cyan"}.get(rec["status"], "red")
        self.console.print(f"  [{colour}]{rec['status']:8}[/] " + escape(
            f"[{d.id}] {rec['model']} · {rec['variant']} · {rec['task']}  {one_line(rec)}"),
            highlight=False)

    def _close_cells(self, d: _Dev, status: str, reason: str, model: str | None = None) -> None:
        """Record every cell still to run on ``d`` (of ``model`` only, when given)."""
        keep = []
        cells = []
        if d.step and d.step[0] == "cell" and (model is None or d.step[1].model == model):
            cells.append(d.step[1])
        for kind, x in d.steps:
            if kind == "cell" and (model is None or x.model == model):
                cells.append(x)
            elif not (kind == "prepare" and x == model):
                keep.append((kind, x))
        d.steps = keep if model is not None else []
        for c in cells:
            self._emit(d, self._record(d, c, status, reason))

    def _set_status(self, d: _Dev, state: str, reason: str = "") -> None:
        d.state, d.reason = state, reason
        entry = self.meta["devices"][d.id]
        entry["status"] = {"done": "ok"}.get(state, state)
        entry["reason"] = reason
        if state in ("lost", "absent", "setup-failed"):
            entry[f"{state.replace('-', '_')}_at"] = now_iso()
        self.write_meta()

    def _release(self, d: _Dev) -> None:
        import ray

        if d.actor is not None:
            try:
                ray.kill(d.actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        d.actor, d.ref, d.step, d.deadline = None, None, None, math.inf

    def _lost(self, d: _Dev, why: str) -> None:
        self.console.print(f"[red]device {d.id} lost[/]: " + escape(why))
        reason = f"device {d.id} lost: {why}"
        if d.step and d.step[0] == "cell":
            c = d.step[1]
            self._emit(d, self._record(d, c, "failed", reason + " (while this cell was running)"))
            d.step = None
        self._close_cells(d, "failed", reason)
        self._release(d)
        self._set_status(d, "lost", why)

    # ------------------------------------------------------------------ scheduling
    def _start(self, d: _Dev) -> None:
        import ray

        from .agent import DeviceAgent

        prior_models = self.meta["devices"][d.id].get("models", {})
        prior = list(store.latest(self.prior[d.id]).values())
        Agent = ray.remote(DeviceAgent)
        d.actor = Agent.options(num_cpus=0, resources={d.spec.resource: 1}, max_restarts=0,
                                max_task_retries=0).remote(
            d.id, self.run_id, d.spec.settings, d.spec.resource, prior, prior_models,
            {sha: self.fcfg.blobs[sha] for sha in
             {f["sha256"] for f in (d.spec.settings.get("model_files") or {}).values()}})
        d.step, d.ref = ("ping", None), d.actor.ping.remote()
        d.t_call = time.monotonic()
        d.deadline = d.t_call + self.device_wait + PING_SLACK_S
        d.state = "starting"

    def _steps(self, dev_id: str, cells) -> list:
        """[("prepare", model) | ("cell", CellId)] for the cells not yet done, in plan order."""
        steps, seen = [], set()
        for c in cells:
            if c.key(dev_id) in self.done:
                continue
            if c.model not in seen:
                seen.add(c.model)
                steps.append(("prepare", c.model))
            steps.append(("cell", c))
        return steps

    def _next(self, d: _Dev) -> None:
        if not d.steps:
            self._release(d)
            self._set_status(d, "done")
            self.console.print(f"[green]device {d.id}: finished[/]")
            return
        kind, x = d.steps.pop(0)
        d.step = (kind, x)
        now = d.t_call = time.monotonic()
        if kind == "prepare":
            d.ref = d.actor.prepare.remote(x)
            d.deadline = now + PREPARE_DEADLINE_S
        else:
            d.ref = d.actor.run.remote(x.model, x.variant, x.task)
            timeout = d.spec.settings.get("cell_timeout") or d.spec.settings["prof"]["cell_timeout"]
            d.deadline = now + timeout + CELL_SLACK_S

    def _handle(self, d: _Dev) -> None:
        import ray
        from ray.exceptions import RayError, RayTaskError

        kind, x = d.step
        call_s = round(time.monotonic() - d.t_call, 3)
        try:
            val = ray.get(d.ref)
        except RayTaskError as e:            # the agent's own code raised; the agent lives on
            why = _last_line(e)
            if kind == "cell":
                self._emit(d, self._record(d, x, "failed", f"fleet agent error: {why}"))
                d.step = None
                self._next(d)
            elif kind == "prepare":
                d.step = None
                self._close_cells(d, "failed", f"preparing {x} on device {d.id} failed: {why}", model=x)
                self._next(d)
            else:
                d.step = None
                self._close_cells(d, "failed", f"device {d.id} setup failed: {why}")
                self._release(d)
                self._set_status(d, "setup-failed", why)
            return
        except RayError as e:                # actor or node died, or unreachable
            if kind == "ping" and "creation task" in str(e):   # the agent's __init__ raised
                why = _last_line(e)
                d.step = None
                self._close_cells(d, "failed", f"device {d.id} setup failed: {why}")
                self._release(d)
                self._set_status(d, "setup-failed", why)
            else:
                self._lost(d, _why_lost(e))
            return
        entry = self.meta["devices"][d.id]
        entry["timings"] = d.timings
        if kind == "ping":
            d.timings["agent_start_s"] = call_s
            d.node = val
            entry["node"] = val
            self.console.print(f"device {d.id}: agent on node {val['node_id'][:12]} "
                               f"({val['hostname']}, {val['node_ip']})", highlight=False)
            d.step, d.ref, d.state = ("hello", None), d.actor.hello.remote(), "hello"
            d.t_call = time.monotonic()
            d.deadline = d.t_call + HELLO_DEADLINE_S
        elif kind == "hello":
            d.timings["hello_s"] = call_s
            d.device = val.get("device")
            entry.update({k: v for k, v in val.items() if k != "setup_error"})
            if val.get("reference_parity"):
                # The reference variant computes off the CPU there (known only now): plan
                # again as edgebench.full does there, which adds its own parity cells.
                s = d.spec.settings
                d.steps = self._steps(d.id, build(s["models"], s["variants"], s["tasks"],
                                                  reference_parity=True))
            d.state = "running"
            entry["status"] = "running"
            for v, pr in (val.get("variants") or {}).items():
                if not pr["ok"]:
                    self.console.print(f"  [yellow]{d.id}: variant {v} cannot run here[/]: "
                                       + escape(pr["reason"]))
            if val.get("setup_error"):
                d.step = None
                self._close_cells(d, "failed", f"device {d.id} setup failed: {val['setup_error']}")
                self._release(d)
                self._set_status(d, "setup-failed", val["setup_error"])
                return
            self.write_meta()
            d.step = None
            self._next(d)
        elif kind == "prepare":
            d.timings["prepare_s"][x] = call_s
            d.step = None
            if "error" in val:
                self._close_cells(d, "failed", f"preparing {x} on device {d.id} failed: {val['error']}",
                                  model=x)
            else:
                entry["models"][x] = val["model_info"]
                for w in val.get("warnings", []):
                    self.console.print(f"  [yellow]{d.id} warning:[/] " + escape(w))
                self.write_meta()
            self._next(d)
        else:
            rec = val["record"]
            rec["device_id"] = d.id
            # call_s - wall_s: what the fleet layer (Ray call, agent, worker start) adds to a cell
            d.timings["cells"][x.slug()] = {"call_s": call_s, "cell_wall_s": rec.get("wall_s")}
            self._emit(d, rec, val.get("log", ""))
            d.step = None
            self._next(d)

    def loop(self) -> None:
        import ray

        t0 = time.monotonic()
        while any(d.state not in ("done", "lost", "absent", "setup-failed") for d in self.devs):
            now = time.monotonic()
            waiting = [d for d in self.devs if d.state == "waiting"]
            if waiting:
                present = resources_present()
                for d in waiting:
                    if d.spec.resource in present:
                        self._start(d)
                    elif now - t0 >= self.device_wait:
                        why = (f"no live Ray node has resource {d.spec.resource} "
                               f"(waited {self.device_wait:g} s)")
                        self.console.print(f"[yellow]device {d.id} absent[/]: " + escape(why))
                        self._close_cells(d, "skipped", f"device absent: {why}")
                        self._set_status(d, "absent", why)
            busy = [d for d in self.devs if d.ref is not None]
            if not busy:
                time.sleep(0.5)
                continue
            ready, _ = ray.wait([d.ref for d in busy], num_returns=1,
                                timeout=0.5 if waiting else 2.0)
            for d in busy:
                if d.ref in ready:
                    self._handle(d)
            now = time.monotonic()
            for d in busy:
                if d.ref is not None and d.ref not in ready and now > d.deadline:
                    if d.state == "starting":
                        why = (f"resource {d.spec.resource} exists but the agent did not start "
                               f"within {self.device_wait + PING_SLACK_S:g} s (held by another run?)")
                        self.console.print(f"[yellow]device {d.id} absent[/]: " + escape(why))
                        d.step = None
                        self._close_cells(d, "skipped", f"device absent: {why}")
                        self._release(d)
                        self._set_status(d, "absent", why)
                    else:
                        self._lost(d, f"no answer from its agent within the call's deadline "
                                      f"({d.step[0]})")

    def release_all(self) -> None:
        for d in self.devs:
            if d.actor is not None:
                self._release(d)
