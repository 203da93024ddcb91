"""The power-source interface and its detection order.

A ``PowerSource`` returns instantaneous per-rail power in milliwatts. Sources that only
expose energy counters (RAPL) turn counter deltas into power themselves.
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


def detect_power_source() -> tuple[PowerSource | None, str]:
    """Return (source, "") for the first source that reads on this machine, else
    (None, reason) naming what was tried."""
    from . import sources

    return sources.detect()
