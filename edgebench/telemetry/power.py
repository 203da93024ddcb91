"""The power-source interface.

A ``PowerSource`` returns instantaneous per-rail power in milliwatts. Sources that only
expose energy counters (RAPL) turn counter deltas into power themselves. The concrete
sources and their detection order (``detect_power_source``) are in ``sources.py``.
"""
from __future__ import annotations


class PowerSource:
    name: str = ""
    # Said in the report next to the figure, e.g. "rails sum, not board input power".
    caveat: str = ""

    def read_mw(self) -> dict[str, float]:
        """Instantaneous power per rail in mW, plus "total" when the source has one."""
        raise NotImplementedError

    def close(self) -> None:
        pass
