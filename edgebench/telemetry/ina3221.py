"""Jetson power rails read straight from the INA3221 (and Thor's INA238) sysfs files.

Layouts (kernel ``Documentation/hwmon/ina3221.rst``; NVIDIA L4T power docs; jetson-stats):

JetPack 5 and later, hwmon driver ``ina3221`` (AGX Orin: two chips, ``1-0040`` and ``1-0041``)::

    /sys/bus/i2c/devices/1-0040/name                      "ina3221"
    /sys/bus/i2c/devices/1-0040/hwmon/hwmonN/in1_label    "VDD_GPU_SOC"  (channels 1-3)
    /sys/bus/i2c/devices/1-0040/hwmon/hwmonN/in1_input    bus voltage, mV
    /sys/bus/i2c/devices/1-0040/hwmon/hwmonN/curr1_input  current, mA
    /sys/bus/i2c/devices/1-0040/hwmon/hwmonN/in7_label    "sum of shunt voltages" (skipped)

    label "NC" = channel not connected (skipped).

JetPack 4 and earlier, IIO driver ``ina3221x``::

    /sys/bus/i2c/devices/0-0040/iio:device0/rail_name_0         "VDD_IN"
    /sys/bus/i2c/devices/0-0040/iio:device0/in_power0_input     mW
    /sys/bus/i2c/devices/0-0040/iio:device0/in_voltage0_input   mV
    /sys/bus/i2c/devices/0-0040/iio:device0/in_current0_input   mA

Thor carrier board, hwmon driver ``ina238`` (system input, reported as rail ``VIN``)::

    .../hwmon/hwmonN/power1_input  uW    (or in1_input mV x curr1_input mA)

Power per channel is V x I, computed here at each read: instantaneous, not averaged by us
(the chip itself averages over its configured conversion window).
"""
from __future__ import annotations

import dataclasses
import glob
import os

from . import rails as _rails
from .power import PowerSource
from .sysfs import read_float, read_text


@dataclasses.dataclass(frozen=True)
class Channel:
    rail: str
    kind: str                     # "hwmon" | "iio" | "ina238"
    volt: str | None = None       # mV file
    curr: str | None = None       # mA file
    power: str | None = None      # mW file (iio) or uW file (ina238)


def discover(sys_root: str = "/sys") -> tuple[list[Channel], list[str]]:
    """Find every INA3221/INA238 rail under ``sys_root``. Returns (channels, notes) where
    notes say what was seen and skipped (for the detection reason)."""
    notes: list[str] = []
    channels: list[Channel] = []
    devices = sorted(glob.glob(os.path.join(sys_root, "bus/i2c/devices/*")))
    if not devices:
        return [], [f"no {os.path.join(sys_root, 'bus/i2c/devices')}"]
    for dev in devices:
        try:
            driver = read_text(os.path.join(dev, "name")).lower()
        except OSError:
            continue
        if "ina3221" not in driver and "ina238" not in driver:
            continue
        for hw in sorted(glob.glob(os.path.join(dev, "hwmon/hwmon*"))):
            if "ina238" in driver:
                ch = Channel("VIN", "ina238",
                             volt=_existing(hw, "in1_input"), curr=_existing(hw, "curr1_input"),
                             power=_existing(hw, "power1_input"))
                if ch.power or (ch.volt and ch.curr):
                    channels.append(ch)
                continue
            for label_file in sorted(glob.glob(os.path.join(hw, "in*_label"))):
                num = os.path.basename(label_file)[2:].split("_")[0]
                try:
                    label = read_text(label_file)
                except OSError:
                    continue
                if not num.isdigit() or int(num) > 3 or _rails.is_unconnected(label):
                    notes.append(f"skipped {dev}/{os.path.basename(label_file)}={label!r}")
                    continue
                volt, curr = _existing(hw, f"in{num}_input"), _existing(hw, f"curr{num}_input")
                if volt and curr:
                    channels.append(Channel(label, "hwmon", volt=volt, curr=curr))
        for iio in sorted(glob.glob(os.path.join(dev, "iio:device*"))):
            for name_file in sorted(glob.glob(os.path.join(iio, "rail_name_*"))):
                num = name_file.rsplit("_", 1)[-1]
                try:
                    label = read_text(name_file)
                except OSError:
                    continue
                if _rails.is_unconnected(label):
                    continue
                ch = Channel(label, "iio", volt=_existing(iio, f"in_voltage{num}_input"),
                             curr=_existing(iio, f"in_current{num}_input"),
                             power=_existing(iio, f"in_power{num}_input"))
                if ch.power or (ch.volt and ch.curr):
                    channels.append(ch)
    if not channels:
        notes.append("no INA3221/INA238 device with readable rails under "
                     f"{os.path.join(sys_root, 'bus/i2c/devices')}")
    return channels, notes


def _existing(d: str, name: str) -> str | None:
    p = os.path.join(d, name)
    return p if os.path.isfile(p) else None


def read_channel_mw(ch: Channel) -> float:
    if ch.kind == "ina238" and ch.power:
        return read_float(ch.power) / 1000.0          # uW -> mW
    if ch.kind == "iio" and ch.power:
        return read_float(ch.power)                   # already mW
    assert ch.volt and ch.curr
    return read_float(ch.volt) * read_float(ch.curr) / 1000.0   # mV * mA / 1000 = mW


class InaSysfsSource(PowerSource):
    name = "ina3221-sysfs"

    def __init__(self, sys_root: str = "/sys"):
        self.channels, self.notes = discover(sys_root)
        if not self.channels:
            raise RuntimeError("; ".join(self.notes))
        first = self.read_mw()  # fails here, at detection, if the files cannot be read
        rails = {k: v for k, v in first.items() if k != "total"}
        _, self.caveat = _rails.with_total(rails, "INA3221 sysfs")

    def read_mw(self) -> dict[str, float]:
        rails: dict[str, float] = {}
        for ch in self.channels:
            rails[ch.rail] = read_channel_mw(ch)
        out, _ = _rails.with_total(rails, "INA3221 sysfs")
        return out
