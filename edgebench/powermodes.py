"""Jetson power modes as a dimension of a run (``--power-modes``): NVIDIA's ``nvpmodel`` lists
and switches them, ``jetson_clocks`` locks the clocks, and sysfs says what the clocks became.

- ``Nvpmodel``: the board's modes (``nvpmodel -p --verbose``), the current one (``-q``), a
  switch (``-m ID``). Output formats and the rule for which switch needs a reboot are the
  ones jetson-stats 7.2.2 relies on (``jtop/core/nvpmodel.py``: the regexes below; a mode
  can be switched to without a reboot when its ``TPC_POWER_GATING`` mask equals the current
  mode's, since a different mask floor-sweeps GPU TPCs at boot).
- ``resolve``: the user's ``MAXN,30W,15W`` or ``0,2,1`` -> the board's modes, or a one-line
  error naming the modes it has.
- ``Sweep``: a context manager that remembers the mode and clock lock it found, switches,
  waits for the clocks to settle, and puts the board back on the way out, whatever the way
  out is (a failed cell, a timeout, Ctrl-C, SIGTERM, an exception).

Nothing here pretends: where ``nvpmodel`` is absent the flag is refused before anything runs.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import time
from typing import Callable

from .telemetry.sysfs import clocks_locked, cpu_policies, gpu_devfreq

# jetson-stats 7.2.2, jtop/core/nvpmodel.py (the same strings nvpmodel prints on JetPack 5/6)
POWER_MODEL_DEFAULT_RE = re.compile(r"PM_CONFIG: DEFAULT=(?P<name>\w+)\((?P<id>\d+)\)")
TPC_POWER_GATING_RE = re.compile(r"TPC_POWER_GATING TPC_PG_MASK (?P<mask>\w+)")
POWER_MODEL_RE = re.compile(r"POWER_MODEL: ID=(?P<id>\d+) NAME=(?P<name>\w+)")
NV_POWER_MODE_RE = re.compile(r"NV Power Mode: (?P<name>\w+)")

COMMAND_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 15.0      # clocks that have not settled by then are recorded as such
SETTLE_INTERVAL_S = 0.5
SETTLE_READS = 3             # equal consecutive reads of the clock limits = settled

Runner = Callable[..., "tuple[int, str]"]


class PowerModeError(RuntimeError):
    """A switch that failed: the message is nvpmodel's own output."""


def _run(cmd: list[str], input: str | None = None, timeout: float = COMMAND_TIMEOUT_S
         ) -> tuple[int, str]:
    p = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr)


def find_nvpmodel() -> str | None:
    """nvpmodel's path (JetPack puts it in /usr/sbin, which a user's PATH may lack)."""
    return shutil.which("nvpmodel") or next(
        (p for p in ("/usr/sbin/nvpmodel", "/usr/bin/nvpmodel") if os.path.isfile(p)), None)


def find_jetson_clocks() -> str | None:
    return shutil.which("jetson_clocks") or next(
        (p for p in ("/usr/bin/jetson_clocks", "/usr/sbin/jetson_clocks") if os.path.isfile(p)),
        None)


@dataclasses.dataclass(frozen=True)
class PowerMode:
    id: int
    name: str
    tpc_mask: str | None = None          # TPC_POWER_GATING mask, where the board lists one

    def label(self) -> str:
        return f"{self.id} {self.name}"


def parse_modes(text: str) -> tuple[list[PowerMode], int | None]:
    """``nvpmodel -p --verbose`` -> (modes in ID order, the default mode's ID)."""
    modes: dict[int, dict] = {}
    default, current = None, None
    for line in text.splitlines():
        m = POWER_MODEL_DEFAULT_RE.search(line)
        if m:
            default = int(m["id"])
        m = POWER_MODEL_RE.search(line)
        if m:
            current = int(m["id"])
            modes[current] = {"id": current, "name": m["name"]}
        m = TPC_POWER_GATING_RE.search(line)
        if m and current is not None:
            modes[current]["tpc_mask"] = m["mask"]
    return [PowerMode(**modes[i]) for i in sorted(modes)], default


def parse_query(text: str) -> tuple[str, int] | None:
    """``nvpmodel -q`` -> (name, id): the name on its labelled line, the ID on the next."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = NV_POWER_MODE_RE.search(line)
        if m:
            ids = [w for w in " ".join(lines[i + 1:i + 2]).split() if w.isdigit()]
            return m["name"], int(ids[0]) if ids else -1
    return None


class Nvpmodel:
    def __init__(self, exe: str, run: Runner = _run):
        self.exe, self._run = exe, run
        self._modes: list[PowerMode] | None = None
        self.default: int | None = None

    def modes(self) -> list[PowerMode]:
        if self._modes is None:
            rc, out = self._run([self.exe, "-p", "--verbose"])
            modes, self.default = parse_modes(out)
            if rc != 0 or not modes:
                raise PowerModeError(f"`nvpmodel -p --verbose` listed no power modes (exit {rc}): "
                                     + _one_line(out))
            self._modes = modes
        return self._modes

    def current(self) -> PowerMode:
        rc, out = self._run([self.exe, "-q"])
        q = parse_query(out)
        if rc != 0 or q is None:
            raise PowerModeError(f"`nvpmodel -q` failed (exit {rc}): {_one_line(out)}")
        name, mode_id = q
        by_id = {m.id: m for m in self.modes()}
        return by_id.get(mode_id) or PowerMode(mode_id, name)

    def switch(self, mode: PowerMode) -> str:
        """``nvpmodel -m ID``. A reboot prompt is answered NO (nothing here reboots a board);
        any error, a prompt or a mode that did not take raises PowerModeError with nvpmodel's
        own words."""
        rc, out = self._run([self.exe, "-m", str(mode.id)], input="NO\n")
        text = _one_line(out)
        if rc != 0 or "NVPM ERROR" in out:
            raise PowerModeError(f"nvpmodel -m {mode.id} failed (exit {rc}): {text}")
        if re.search(r"reboot", out, re.IGNORECASE):
            raise PowerModeError(f"nvpmodel -m {mode.id} wants a reboot (declined): {text}")
        now = self.current()
        if now.id != mode.id:
            raise PowerModeError(f"nvpmodel -m {mode.id} returned, but `nvpmodel -q` says "
                                 f"{now.label()}: {text}")
        return text


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.strip().splitlines() if line.strip())[:500] \
        or "(no output)"


def resolve(spec: str, modes: list[PowerMode]) -> list[PowerMode]:
    """``MAXN,30W,15W`` or ``0,2,1`` (or both mixed) -> the board's modes, in the order given.
    A name matches exactly or without its ``MODE_`` prefix, case-insensitively. Raises
    ValueError naming the modes the board has."""
    by_id = {m.id: m for m in modes}
    out: list[PowerMode] = []
    for token in (t.strip() for t in spec.split(",")):
        if not token:
            continue
        if token.isdigit():
            hit = by_id.get(int(token))
        else:
            t = token.upper()
            hit = next((m for m in modes if m.name.upper() in (t, f"MODE_{t}")
                        or m.name.upper().removeprefix("MODE_") == t.removeprefix("MODE_")), None)
        if hit is None:
            raise ValueError(f"--power-modes: this board has no power mode {token!r}; its modes "
                             f"(nvpmodel -p): {', '.join(m.label() for m in modes)}")
        if hit in out:
            raise ValueError(f"--power-modes: {hit.label()} is given twice")
        out.append(hit)
    if not out:
        raise ValueError("--power-modes: no mode given (e.g. --power-modes MAXN,30W,15W)")
    return out


def reboot_needed(current: PowerMode, target: PowerMode) -> str:
    """Why switching from ``current`` to ``target`` needs a reboot ("" when it does not)."""
    if current.tpc_mask and target.tpc_mask and current.tpc_mask != target.tpc_mask:
        return (f"switching from {current.label()} to {target.label()} needs a reboot: their "
                f"GPU TPC power-gating masks differ ({current.tpc_mask} vs {target.tpc_mask}), "
                "which takes effect at boot only. Switch by hand (sudo nvpmodel -m "
                f"{target.id}, reboot) and run that mode without --power-modes, or leave it out")
    return ""


def clock_snapshot(root: str = "/") -> dict:
    """The clock limits nvpmodel sets and jetson_clocks locks, read from sysfs (MHz)."""
    pols = cpu_policies(root)
    gpu = gpu_devfreq(root)
    locked, _ = clocks_locked(pols, gpu)

    def mhz(v):
        return None if v is None else round(v / 1000.0, 1)
    return {"cpu_max_mhz": {p["policy"]: mhz(p["max_khz"]) for p in pols},
            "cpu_min_mhz": {p["policy"]: mhz(p["min_khz"]) for p in pols},
            "cpu_cur_mhz": {p["policy"]: mhz(p["cur_khz"]) for p in pols},
            "gpu_max_mhz": gpu["max_mhz"] if gpu else None,
            "gpu_min_mhz": gpu["min_mhz"] if gpu else None,
            "gpu_cur_mhz": gpu["cur_mhz"] if gpu else None,
            "locked": locked}


def settle(snapshot: Callable[[], dict] = clock_snapshot, timeout_s: float = SETTLE_TIMEOUT_S,
           interval_s: float = SETTLE_INTERVAL_S, reads: int = SETTLE_READS
           ) -> tuple[dict, float, bool]:
    """Wait until the clock limits (max/min, CPU and GPU) read the same ``reads`` times in a
    row: (last snapshot, seconds waited, settled). The current clocks are not compared: a
    governor moves them all the time unless jetson_clocks locked them."""
    t0 = time.monotonic()
    keys = ("cpu_max_mhz", "cpu_min_mhz", "gpu_max_mhz", "gpu_min_mhz")
    last, same = None, 0
    while True:
        snap = snapshot()
        limits = tuple(repr(snap.get(k)) for k in keys)
        same = same + 1 if limits == last else 1
        last = limits
        waited = time.monotonic() - t0
        if same >= reads:
            return snap, round(waited, 2), True
        if waited >= timeout_s:
            return snap, round(waited, 2), False
        time.sleep(interval_s)


@dataclasses.dataclass
class ModeState:
    """What a switch found: the record's ``power_mode_state``."""
    id: int
    name: str
    jetson_clocks: bool | None
    settle_s: float
    settled: bool
    clocks: dict
    nvpmodel_output: str = ""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


class Sweep:
    """Switch between modes, and restore the mode and clock lock found, however it ends.

    ``with Sweep(nvp, jetson_clocks) as sweep: state = sweep.switch(mode)``. SIGTERM is turned
    into KeyboardInterrupt inside the block, so a killed run restores the board too."""

    def __init__(self, nvp: Nvpmodel, jetson_clocks: str | None, run: Runner = _run,
                 snapshot: Callable[[], dict] = clock_snapshot, settle_kw: dict | None = None,
                 say: Callable[[str], None] = print):
        self.nvp, self.jc, self._run = nvp, jetson_clocks, run
        self.snapshot, self.settle_kw, self.say = snapshot, settle_kw or {}, say
        self.found: PowerMode | None = None
        self.found_locked: bool | None = None
        self.restored: dict | None = None
        self._old_term = None

    def __enter__(self) -> "Sweep":
        self.found = self.nvp.current()
        self.found_locked = self.snapshot().get("locked")
        if hasattr(signal, "SIGTERM"):
            try:
                self._old_term = signal.signal(signal.SIGTERM, _term_to_interrupt)
            except ValueError:          # not the main thread: the caller restores on exit
                self._old_term = None
        return self

    def switch(self, mode: PowerMode) -> ModeState:
        out = self.nvp.switch(mode)
        if self.found_locked and self.jc:
            # nvpmodel sets the new mode's limits; jetson_clocks, as the user had it, locks
            # the clocks at them again.
            rc, jout = self._run([self.jc])
            if rc != 0:
                raise PowerModeError(f"jetson_clocks after nvpmodel -m {mode.id} failed "
                                     f"(exit {rc}): {_one_line(jout)}")
        snap, waited, ok = settle(self.snapshot, **self.settle_kw)
        return ModeState(id=mode.id, name=mode.name, jetson_clocks=snap.get("locked"),
                         settle_s=waited, settled=ok, clocks=snap, nvpmodel_output=out)

    def restore(self) -> dict:
        """Back to the mode and clock lock found; returns what was done (for run.json)."""
        found = self.found
        if found is None:
            return {}
        done: dict = {"mode": found.label(), "jetson_clocks": self.found_locked}
        try:
            if self.nvp.current().id != found.id:
                self.nvp.switch(found)
            if self.found_locked and self.jc:
                self._run([self.jc])
            snap, _, _ = settle(self.snapshot, **self.settle_kw)
            done.update(ok=True, clocks=snap)
            self.say(f"power mode restored: {found.label()}"
                     + (", clocks locked (jetson_clocks)" if self.found_locked else ""))
        except Exception as e:  # noqa: BLE001 - said loudly, recorded; never hides the cause
            done.update(ok=False, error=f"{type(e).__name__}: {e}")
            self.say(f"WARNING: could not restore power mode {found.label()}: {e}. "
                     f"Restore it by hand: sudo nvpmodel -m {found.id}")
        self.restored = done
        return done

    def __exit__(self, *exc) -> None:
        try:
            self.restore()
        finally:
            if self._old_term is not None:
                signal.signal(signal.SIGTERM, self._old_term)


def _term_to_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def enter_mode(settings, sweep: Sweep, mode: PowerMode, say: Callable[[str], None] = print):
    """Switch to ``mode`` for the cells that follow: (the run's settings with the mode and
    what the switch found, "" or why it failed -- then that mode's cells fail with it)."""
    try:
        state = sweep.switch(mode)
    except (PowerModeError, OSError, subprocess.SubprocessError) as e:
        return dataclasses.replace(settings, power_mode=mode.name, power_mode_state={
            "id": mode.id, "name": mode.name, "error": str(e)}), f"power mode {mode.label()}: {e}"
    cpu = sorted({v for v in state.clocks["cpu_max_mhz"].values() if v})
    say(f"[bold]power mode {mode.label()}[/]: CPU max {'/'.join(f'{v:g}' for v in cpu) or '?'} "
        f"MHz, GPU max {state.clocks['gpu_max_mhz'] or '?'} MHz, jetson_clocks "
        f"{'on' if state.jetson_clocks else 'off'}, settled in {state.settle_s} s"
        + ("" if state.settled else " [yellow](clocks still moving)[/]"))
    return dataclasses.replace(settings, power_mode=mode.name,
                               power_mode_state=state.to_json()), ""
