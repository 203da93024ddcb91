"""Concrete power sources and the order they are tried in.

Order (first one that reads wins):

1. ``ina3221-sysfs`` - the Jetson INA3221/INA238 files themselves: no daemon, no root needed on
   JetPack 5+, read at the Monitor's own rate. jtop and tegrastats read these same sensors.
2. ``jtop`` - jetson-stats' service: the same rails, at the service's interval; the way in
   from a container that has ``/run/jtop.sock`` but not the host's i2c sysfs.
3. ``tegrastats`` - NVIDIA's tool, parsed line by line; its own interval, may need root.
4. ``nvml`` - discrete NVIDIA GPUs (and Thor): GPU board power only.
5. ``rapl`` - x86 CPU package energy counters: CPU package only.

Each source carries a ``caveat`` that the report prints beside the figure. Where none reads,
``detect()`` returns ``(None, reason)`` naming every source tried and why it failed.
``EDGEBENCH_POWER_SOURCE=<name>`` tries only that source; ``=none`` turns power off.
``EDGEBENCH_POWER_CHECK=<name>`` reads a second source beside it (``check_source``).
"""
from __future__ import annotations

import os
import shutil
from typing import Callable

from .power import PowerSource


def _ina() -> PowerSource:
    from .ina3221 import InaSysfsSource

    return InaSysfsSource()


def _jtop() -> PowerSource:
    from .jtop_source import JtopSource

    return JtopSource()


def _tegrastats() -> PowerSource:
    from .tegrastats import TegrastatsSource

    exe = shutil.which("tegrastats") or ("/usr/bin/tegrastats" if os.path.exists("/usr/bin/tegrastats") else None)
    if exe is None:
        raise FileNotFoundError("tegrastats not found (not on PATH, no /usr/bin/tegrastats)")
    return TegrastatsSource(exe)


def _nvml() -> PowerSource:
    from .nvml import NvmlSource

    return NvmlSource()


def _rapl() -> PowerSource:
    from .rapl import RaplSource

    return RaplSource()


ORDER: list[tuple[str, Callable[[], PowerSource]]] = [
    ("ina3221-sysfs", _ina),
    ("jtop", _jtop),
    ("tegrastats", _tegrastats),
    ("nvml", _nvml),
    ("rapl", _rapl),
]


def _why(e: BaseException) -> str:
    text = " ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def detect(order: list[tuple[str, Callable[[], PowerSource]]] | None = None
           ) -> tuple[PowerSource | None, str]:
    order = list(order or ORDER)
    wanted = os.environ.get("EDGEBENCH_POWER_SOURCE", "").strip().lower()
    if wanted in ("none", "off", "0"):
        return None, "power sampling turned off (EDGEBENCH_POWER_SOURCE=none)"
    if wanted:
        order = [(n, f) for n, f in order if n == wanted]
        if not order:
            return None, (f"EDGEBENCH_POWER_SOURCE={wanted!r} is not a known source "
                          f"({', '.join(n for n, _ in ORDER)})")
    tried = []
    for name, factory in order:
        try:
            src = factory()
        except Exception as e:  # noqa: BLE001 - every failure is a reason, never a crash
            tried.append(f"{name}: {_why(e)}")
            continue
        return src, ""
    return None, "no power sensor found (tried " + "; ".join(tried) + ")"


CHECK_ENV = "EDGEBENCH_POWER_CHECK"


def check_source(primary: str) -> tuple[PowerSource | None, str]:
    """``EDGEBENCH_POWER_CHECK=<source>``: a second source the Monitor reads beside the first
    one at the same instants (e.g. ``EDGEBENCH_POWER_SOURCE=jtop EDGEBENCH_POWER_CHECK=
    ina3221-sysfs``), to check one against the other over the same window. (None, "") when
    unset or the same as the primary; (None, reason) when it does not start."""
    wanted = os.environ.get(CHECK_ENV, "").strip().lower()
    if not wanted or wanted == primary:
        return None, ""
    factory = dict(ORDER).get(wanted)
    if factory is None:
        return None, f"{CHECK_ENV}={wanted!r} is not a known source ({', '.join(n for n, _ in ORDER)})"
    try:
        return factory(), ""
    except Exception as e:  # noqa: BLE001 - a reason, never a crash
        return None, f"{wanted}: {_why(e)}"


def detect_power_source() -> tuple[PowerSource | None, str]:
    """Return (source, "") for the first source that reads on this machine, else
    (None, reason) naming what was tried."""
    return detect()
