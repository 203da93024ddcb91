"""What a set of Jetson power rails adds up to, and what that total means.

Shared by every Jetson source (INA sysfs, jtop, tegrastats) so the same board gets the same
"total" and the same caveat whichever way it was read.

Board facts (NVIDIA L4T power docs, jetson-stats ``total_power``):
- Boards with an input rail: its reading *is* the total and the other rails are parts of it.
  ``VIN`` (Thor carrier-board INA238: system input), ``VDD_IN`` (Orin Nano/NX, Xavier NX,
  TX2: module input), ``POM_5V_IN`` (Nano: module 5 V input).
- AGX Orin (``VDD_GPU_SOC``, ``VDD_CPU_CV``, ``VIN_SYS_5V0``, ``VDDQ_VDD2_1V8AO``), AGX Xavier
  (``GPU``, ``CPU``, ``SOC``, ``CV``, ``VDDRQ``, ``SYS5V``) and Thor without the carrier INA238
  have no input rail: the total is the sum of the rails, which leaves out the carrier board,
  fan and peripherals, so it is *not* board input power.
"""
from __future__ import annotations

# Checked in this order: the first present is the total.
INPUT_RAILS = ("VIN", "VDD_IN", "POM_5V_IN")
_INPUT_MEANING = {
    "VIN": "system input power measured on the carrier board (INA238)",
    "VDD_IN": "module input power (carrier board not included)",
    "POM_5V_IN": "module 5 V input power (carrier board not included)",
}


def is_unconnected(name: str) -> bool:
    """INA3221 channels that carry no rail: 'NC' and the driver's 'sum of shunt voltages'."""
    n = name.strip()
    return n.upper() == "NC" or n.lower().startswith("sum of shunt")


def clean_rails(rails: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in rails.items() if not is_unconnected(k)}


def input_rail(rails: dict[str, float]) -> str | None:
    for name in INPUT_RAILS:
        if name in rails:
            return name
    return None


def total_and_caveat(rails: dict[str, float], how: str) -> tuple[float, str | None, str]:
    """(total mW, input rail name or None, caveat text). ``how`` names the reader, e.g.
    "INA3221 sysfs" or "tegrastats"."""
    rails = clean_rails(rails)
    name = input_rail(rails)
    if name is not None:
        return rails[name], name, (f"{how}: total is {name}, {_INPUT_MEANING[name]}; "
                                   f"the other rails are parts of it")
    names = sorted(rails)
    return (sum(rails.values()), None,
            f"{how}: total is the sum of rails {'+'.join(names)}, not board input power "
            f"(carrier board, fan and peripherals are not measured)")


def with_total(rails: dict[str, float], how: str) -> tuple[dict[str, float], str]:
    """Rails plus a "total" key, and the caveat, in the shape ``PowerSource.read_mw`` returns."""
    clean = clean_rails(rails)
    total, _, caveat = total_and_caveat(clean, how)
    out = dict(clean)
    out["total"] = total
    return out, caveat
