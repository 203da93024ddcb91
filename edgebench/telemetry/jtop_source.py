"""Power (and memory) through jetson-stats' ``jtop`` service (jetson-stats 4.x and 7.x).

API (jetson-stats ``jtop/jtop.py``): ``jtop(interval).start()`` connects to ``jtop.service``
over ``/run/jtop.sock`` and raises ``JtopException`` when the service is not running;
``j.power`` is ``{'rail': {name: {'volt', 'curr', 'power', 'avg', 'online', ...}},
'tot': {'power', 'avg', ['name']}}`` in mV/mA/mW. ``tot`` is the input rail when the board
has one (VIN / VDD_IN / POM_5V_IN, then ``tot['name']`` names it and it is removed from
``rail``), else the sum of the rails. We read ``power`` only: ``avg`` is jtop's running
average since the client started and is never used. ``j.memory['RAM']`` is in kB; its
``shared`` field is NvMapMemUsed (memory mapped for the GPU).

The service samples at its own interval (the first client sets it). ``read_mw`` returns a
sample once, when the service has taken a new one (jtop's ``uptime`` moved), and nothing
between: the monitor then holds only the service's own samples.

A dropped client. jetson-stats' service (``service.py``, 4.2.12 and 7.2.2 alike) stops sampling
when its client has sent nothing for TIMEOUT_GAIN (3 s): its ``queue.Empty`` branch closes
its timer thread, and only a new ``{'interval': ...}`` message starts it again. The client's
reader thread meanwhile goes on copying the last sample, so a client whose process was
stopped or starved for 3 s (a call holding the GIL; QEMU beside a loaded CI machine, CI
2026-11-27: jtop's idle sample through both power modes' windows) would read one sample for
the rest of the cell as if it were new. This source notices that no new sample has come for
longer than the service waits, sends the service the client's own ``{'interval'}`` message
again (what ``jtop.start`` sends, ``jtop.py _get_configuration``), takes the service's
``{'init'}`` answer off the queue, and says so in ``events`` (the record's
``power_w.source_events``).
"""
from __future__ import annotations

import os
import queue
import time

from .power import PowerSource

# jtop's library probes take about 0.3 s on an x86 VM, more under QEMU; the wait is bounded.
PROBE_WAIT_S = 30.0
# The service drops a client silent for TIMEOUT_GAIN seconds (jetson-stats service.py: 3, in
# 4.2.12 and 7.2.2); a sample older than that is taken as a dropped client.
SERVICE_DROP_S = 3.0
# A service that never answers is asked every 3 s: the record keeps the first few events.
MAX_EVENTS = 8


def _service_socket() -> str:
    """Where jtop.service listens (jetson-stats' own constant; the same path in 4.x and 7.x)."""
    try:
        from jtop.service import JTOP_PIPE
    except Exception:  # noqa: BLE001 - a layout without that module: the documented path
        return "/run/jtop.sock"
    return JTOP_PIPE


def power_from_jtop(power: dict) -> tuple[dict[str, float], str]:
    """``j.power`` -> (rails + "total" in mW, caveat). Pure: testable on recorded dicts."""
    if not power or "tot" not in power:
        raise RuntimeError("jtop reports no power rails on this board")
    out: dict[str, float] = {}
    for name, rail in (power.get("rail") or {}).items():
        if rail.get("online", True) and "power" in rail:
            out[name] = float(rail["power"])
    tot = power["tot"]
    total = float(tot["power"])
    input_name = tot.get("name")
    if input_name:
        out[input_name] = total
        caveat = (f"jtop: total is the input rail {input_name} (jtop's 'tot'); "
                  "the other rails are parts of it")
    else:
        caveat = (f"jtop: total is jtop's 'tot', the sum of rails {'+'.join(sorted(out))}, "
                  "not board input power (carrier board, fan and peripherals are not measured)")
    out["total"] = total
    return out, caveat


class JtopSource(PowerSource):
    name = "jtop"

    def __init__(self, interval_s: float = 0.5):
        from jtop import jtop  # jetson-stats; raises ImportError where absent

        # jtop() starts a thread that probes the board's libraries with subprocesses (dpkg -l,
        # gcc, ldconfig, nvcc; jetson-stats 7.x jtop.py ``_load_jetson_libraries``) before it
        # even connects. Where no service listens, skip it: every cell tries this source, and
        # a probe still running when the cell took its memory baseline counted a forked
        # child's RSS into it (CI, 2026-11-26: baseline 886.6 MB, peak 485.1 MB).
        pipe = _service_socket()
        if not os.path.exists(pipe):
            raise RuntimeError(f"no jtop service here ({pipe} does not exist; on a Jetson: "
                               "sudo systemctl start jtop.service)")
        self._j = jtop(interval=interval_s)
        try:
            self._j.start()  # JtopException with the service's own message when not running
        finally:
            # Where it does, its probes end before the cell measures anything.
            probe = getattr(self._j, "_thread_libraries", None)
            if probe is not None:
                probe.join(timeout=PROBE_WAIT_S)
        try:
            _, self.caveat = power_from_jtop(self._j.power)
        except Exception:
            self.close()
            raise
        self.interval_s = getattr(self._j, "interval", interval_s)
        self._events: list[str] = []
        self._untold = 0              # events past MAX_EVENTS
        self._t_start = time.monotonic()
        self._stamp = None            # jtop's uptime of the last sample returned
        self._fresh_at = self._t_start
        self._rearmed_at: float | None = None
        self._awaiting_init = False

    def read_mw(self) -> dict[str, float]:
        if not self._j.ok(spin=True):
            raise RuntimeError("jtop client stopped")
        now = time.monotonic()
        if self._awaiting_init:
            self._take_init()
        # The stamp before the power: if the reader swaps samples between the two reads, the
        # new power is returned under the old stamp and again under its own (never lost).
        stamp = self._j.uptime
        if stamp != self._stamp:
            if self._rearmed_at is not None:
                self._event(f"jtop: new samples again {now - self._rearmed_at:.1f} s "
                                   f"after asking (t={now - self._t_start:.1f} s)")
                self._rearmed_at = None
            self._stamp, self._fresh_at = stamp, now
            out, _ = power_from_jtop(self._j.power)
            return out
        waited = now - self._fresh_at
        if waited > SERVICE_DROP_S and (self._rearmed_at is None
                                        or now - self._rearmed_at > SERVICE_DROP_S):
            self._rearm(now, waited)
        return {}        # no new sample since the last one returned: nothing to record

    @property
    def events(self) -> list[str]:
        """What this source did about the service (the record's power_w.source_events)."""
        more = [f"jtop: {self._untold} more such events"] if self._untold else []
        return self._events + more

    def _event(self, text: str) -> None:
        if len(self._events) < MAX_EVENTS:
            self._events.append(text)
        else:
            self._untold += 1

    def _rearm(self, now: float, waited: float) -> None:
        """The client's own {'interval'} message once more, so that a service that dropped
        this client samples again; its {'init'} answer is taken off the queue by _take_init
        (left there, the service would put it back each time it reads it)."""
        self._event(f"jtop: no new sample for {waited:.1f} s (the service drops a client "
                           f"silent for {SERVICE_DROP_S:g} s), asked it to sample again "
                           f"(t={now - self._t_start:.1f} s)")
        self._rearmed_at = now
        self._j._controller.put({"interval": self._j.interval_user})
        self._awaiting_init = True
        self._take_init()

    def _take_init(self) -> None:
        """Non-blocking: reads what is on the client/service queue now; the service's 'init'
        ends the wait, anything else (the reader's alive {}) goes back for the service."""
        q = self._j._controller
        for _ in range(4):
            try:
                msg = q.get_nowait()
            except queue.Empty:
                return
            if isinstance(msg, dict) and "init" in msg:
                self._awaiting_init = False
                return
            q.put(msg)

    def memory_mb(self) -> dict:
        """jtop's RAM figures in MiB (unified memory: CPU and GPU share it)."""
        ram = self._j.memory["RAM"]
        return {"used": ram["used"] / 1024.0, "total": ram["tot"] / 1024.0,
                "gpu_shared": ram.get("shared", 0) / 1024.0}

    def close(self) -> None:
        try:
            self._j.close()
        except Exception:  # noqa: BLE001 - closing a dead client must not raise
            pass
