"""Telemetry: tegrastats parsing on recorded lines, power maths, the power-source readers on
recreated sysfs layouts, detection on this machine, device state, and the CLI.

Recorded inputs and where they come from: tests/fixtures/tegrastats/README.md (tegrastats
lines), and the RAPL counter values quoted in test_rapl_wraparound_on_recorded_counters.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.reference import is_agx_orin, paper_figures
from edgebench.telemetry import maths
from edgebench.telemetry import device_state as ds
from edgebench.telemetry import rails as rails_mod
from edgebench.telemetry import sources
from edgebench.telemetry.ina3221 import InaSysfsSource, discover
from edgebench.telemetry.jtop_source import power_from_jtop
from edgebench.telemetry.monitor import Monitor
from edgebench.telemetry.rapl import RaplSource, counter_delta_uj, power_mw
from edgebench.telemetry.tegrastats import TegrastatsParseError, parse_line

REPO = Path(__file__).resolve().parents[1]
FIX = Path(__file__).resolve().parent / "fixtures" / "tegrastats"


def lines(name: str) -> list[str]:
    return [l for l in (FIX / name).read_text().splitlines() if l.strip()]


# ------------------------------------------------------------------ tegrastats, recorded lines

# (file, [(ram_used, ram_total, {rail: instantaneous mW})] per line, exactly as printed)
RECORDED = [
    ("tx2_jetpack3_2018.txt", [
        (1685, 7854, {"VDD_IN": 1931, "VDD_CPU": 231, "VDD_GPU": 154, "VDD_SOC": 385, "VDD_WIFI": 38, "VDD_DDR": 326}),
        (1685, 7854, {"VDD_IN": 1776, "VDD_CPU": 231, "VDD_GPU": 154, "VDD_SOC": 386, "VDD_WIFI": 38, "VDD_DDR": 250}),
        (1685, 7854, {"VDD_IN": 1738, "VDD_CPU": 231, "VDD_GPU": 154, "VDD_SOC": 386, "VDD_WIFI": 38, "VDD_DDR": 250}),
    ]),
    ("tx2_jetpack4.txt", [
        (3276, 7859, {"VDD_SYS_GPU": 182, "VDD_SYS_SOC": 730, "VDD_4V0_WIFI": 0, "VDD_IN": 5297,
                      "VDD_SYS_CPU": 1917, "VDD_SYS_DDR": 1241}),
    ]),
    ("agx_xavier_jetpack4.2.txt", [
        (14700, 15692, {"GPU": 463, "CPU": 618, "SOC": 2936, "CV": 0, "VDDRQ": 309, "SYS5V": 3306}),
    ]),
    ("agx_orin_64gb_jetpack5.txt", [
        (4321, 62801, {"VDD_GPU_SOC": 2340, "VDD_CPU_CV": 390, "VIN_SYS_5V0": 4025, "VDDQ_VDD2_1V8AO": 301}),
    ]),
    ("agx_orin_64gb_jetpack6.2.1_r36.4.4.txt", [
        (18207, 62841, {"VDD_GPU_SOC": 2412, "VDD_CPU_CV": 1607, "VIN_SYS_5V0": 4707}),
        (18202, 62841, {"VDD_GPU_SOC": 2412, "VDD_CPU_CV": 1607, "VIN_SYS_5V0": 4607}),
        (18203, 62841, {"VDD_GPU_SOC": 2412, "VDD_CPU_CV": 1607, "VIN_SYS_5V0": 4707}),
    ]),
    ("agx_orin_64gb_jetpack7.2_r39.2.txt", [
        (4714, 62878, {"VDD_GPU_SOC": 2265, "VDD_CPU_CV": 2643, "VIN_SYS_5V0": 4722}),
    ]),
    ("agx_thor_jetpack7.1_r38.4.txt", [
        (4208, 125773, {"VDD_GPU": 0, "VDD_CPU_SOC_MSS": 4165, "VIN_SYS_5V0": 4126}),
        (4280, 125773, {"VDD_GPU": 0, "VDD_CPU_SOC_MSS": 4923, "VIN_SYS_5V0": 4327}),
        (4309, 125773, {"VDD_GPU": 0, "VDD_CPU_SOC_MSS": 4544, "VIN_SYS_5V0": 4428}),
    ]),
    ("agx_thor_jetpack7.2_r39.2.txt", [
        (9101, 125811, {"VDD_GPU": 4925, "VDD_CPU_SOC_MSS": 8710, "VIN_SYS_5V0": 6767}),
        (9091, 125811, {"VDD_GPU": 4925, "VDD_CPU_SOC_MSS": 7953, "VIN_SYS_5V0": 6667}),
    ]),
]


def test_every_fixture_file_is_covered():
    assert sorted(p.name for p in FIX.glob("*.txt")) == sorted(f for f, _ in RECORDED)


@pytest.mark.parametrize("fname,expected", RECORDED, ids=[f for f, _ in RECORDED])
def test_recorded_lines_ram_and_every_rail(fname, expected):
    got = [parse_line(l) for l in lines(fname)]
    assert len(got) == len(expected)
    for rec, (used, total, rails) in zip(got, expected):
        assert rec["ram_used_mb"] == used
        assert rec["ram_total_mb"] == total
        assert rec["rails_mw"] == rails          # exact, every rail, nothing extra


def test_instantaneous_value_is_the_first_number_never_the_average():
    # Thor 7.2, second line: "VDD_CPU_SOC_MSS 7953mW/8332mW/8710mW" -> cur/avg/max.
    rec = parse_line(lines("agx_thor_jetpack7.2_r39.2.txt")[1])
    assert rec["rails_mw"]["VDD_CPU_SOC_MSS"] == 7953
    # Orin JP6, second line: "VIN_SYS_5V0 4607mW/4657mW".
    rec = parse_line(lines("agx_orin_64gb_jetpack6.2.1_r36.4.4.txt")[1])
    assert rec["rails_mw"]["VIN_SYS_5V0"] == 4607
    # TX2 2018, second line: "VDD_IN 1776/1853".
    assert parse_line(lines("tx2_jetpack3_2018.txt")[1])["rails_mw"]["VDD_IN"] == 1776


def test_totals_follow_the_board():
    tx2 = parse_line(lines("tx2_jetpack4.txt")[0])
    assert tx2["input_rail"] == "VDD_IN" and tx2["total_mw"] == 5297   # input rail, not a sum
    orin5 = parse_line(lines("agx_orin_64gb_jetpack5.txt")[0])
    assert orin5["input_rail"] is None
    assert orin5["total_mw"] == 2340 + 390 + 4025 + 301                  # NC channels dropped
    assert orin5["rails_unconnected"] == 2
    xavier = parse_line(lines("agx_xavier_jetpack4.2.txt")[0])
    assert xavier["total_mw"] == 463 + 618 + 2936 + 0 + 309 + 3306


def test_gpu_temps_and_cpu_fields_across_generations():
    tx2 = parse_line(lines("tx2_jetpack3_2018.txt")[0])
    assert tx2["gpu_load_pct"] == 0 and tx2["gpu_freq_mhz"] == [140]
    assert tx2["temps_c"]["Tdiode"] == 37.25 and tx2["time"] is None
    assert tx2["cpu_freq_mhz"][0] == 1303 and tx2["emc_freq_mhz"] == 1866
    xavier = parse_line(lines("agx_xavier_jetpack4.2.txt")[0])
    assert xavier["gpu_load_pct"] == 0 and xavier["gpu_freq_mhz"] is None  # "GR3D_FREQ 0%"
    assert xavier["temps_c"]["GPU"] == 30.5     # temperature GPU@30.5C, rail GPU 463/463
    orin5 = parse_line(lines("agx_orin_64gb_jetpack5.txt")[0])
    assert orin5["time"] == "04-11-2025 10:36:27"
    assert sorted(orin5["temps_offline"]) == ["CV0", "CV1", "CV2", "GPU"]  # -256C
    assert "GPU" not in orin5["temps_c"] and orin5["temps_c"]["tj"] == 44.343
    orin6 = parse_line(lines("agx_orin_64gb_jetpack6.2.1_r36.4.4.txt")[0])
    assert orin6["gpu_freq_mhz"] == [0, 0] and orin6["swap_used_mb"] == 86
    assert orin6["cpu_load_pct"][4] == 46 and len(orin6["cpu_load_pct"]) == 12
    orin72 = parse_line(lines("agx_orin_64gb_jetpack7.2_r39.2.txt")[0])
    assert orin72["cpu_load_pct"][-4:] == [None] * 4 and orin72["cpus_online"] == 8
    assert orin72["temps_c"]["soc1"] == 49.0 and orin72["temps_max_c"]["cpu"] == 50.718
    thor = parse_line(lines("agx_thor_jetpack7.2_r39.2.txt")[1])
    assert thor["gpu_load_pct"] is None                    # Thor prints no GPU load
    assert thor["gpu_freq_mhz"] == [314, 314, 314]
    assert thor["temps_c"]["cpu"] == 34.312 and thor["temps_max_c"]["cpu"] == 34.843


@pytest.mark.parametrize("bad", ["", "tegrastats: some warning", "SWAP 0/2048MB (cached 0MB)",
                                 "RAM lots/of memory"])
def test_unparseable_lines_raise(bad):
    with pytest.raises(TegrastatsParseError):
        parse_line(bad)


# ------------------------------------------------------------------ maths

def test_integrate_and_mean_on_hand_built_series():
    t = [0.0, 1.0, 2.0, 4.0]
    w = [10.0, 20.0, 20.0, 0.0]
    # trapezoids: 15 + 20 + 20 = 55 J
    assert maths.integrate(t, w) == pytest.approx(55.0)
    assert maths.time_weighted_mean(t, w) == pytest.approx(55.0 / 4.0)
    assert maths.time_weighted_mean([3.0], [7.0]) == 7.0
    assert maths.time_weighted_mean([], []) is None


def test_window_interpolates_the_edges():
    samples = [(0.0, 10.0), (1.0, 20.0), (3.0, 40.0)]
    pts = maths.window(samples, 0.5, 2.0)
    assert pts == [(0.5, 15.0), (1.0, 20.0), (2.0, 30.0)]
    # outside the samples the edge values are held, not extrapolated
    assert maths.window(samples, -1.0, 5.0) == [(-1.0, 10.0), (0.0, 10.0), (1.0, 20.0),
                                                (3.0, 40.0), (5.0, 40.0)]


def test_energy_summary_subtracts_idle():
    samples = [(0.0, 10.0), (1.0, 20.0), (3.0, 40.0)]
    s = maths.energy_summary(samples, 0.5, 2.0, idle_w=5.0, n_items=30)
    mean = maths.integrate([0.5, 1.0, 2.0], [15.0, 20.0, 30.0]) / 1.5   # 20.8333 W
    assert s["mean"] == pytest.approx(mean)
    assert s["net"] == pytest.approx(mean - 5.0)
    assert s["energy_mj_per_sample"] == pytest.approx((mean - 5.0) * 1.5 / 30 * 1000)
    no_idle = maths.energy_summary(samples, 0.5, 2.0, idle_w=None, n_items=30)
    assert no_idle["net"] is None and no_idle["energy_mj_per_sample"] is None


def test_energy_over_recorded_tegrastats_series():
    # Thor JetPack 7.1 printed one line per second (10:00:32, :33, :34): integrate the
    # recorded instantaneous totals, with the idle floor taken from the first line.
    recs = [parse_line(l) for l in lines("agx_thor_jetpack7.1_r38.4.txt")]
    secs = [int(r["time"][-2:]) for r in recs]
    samples = [(float(s - secs[0]), r["total_mw"] / 1000.0) for s, r in zip(secs, recs)]
    assert samples == [(0.0, 8.291), (1.0, 9.25), (2.0, 8.972)]
    s = maths.energy_summary(samples, 0.0, 2.0, idle_w=8.291, n_items=4)
    joules = 0.5 * (8.291 + 9.25) + 0.5 * (9.25 + 8.972)
    assert s["mean"] == pytest.approx(joules / 2.0)
    assert s["energy_mj_per_sample"] == pytest.approx((joules - 8.291 * 2.0) / 4 * 1000)


# ------------------------------------------------------------------ RAPL

# Recorded energy_uj values from mlco2/codecarbon issue #322 (intel-rapl:0, one reading every
# 15 s, Ubuntu 22.04): codecarbon logged them as kWh = uJ * 1e-6 * 2.77778e-7; dividing by
# 2.77778e-13 gives back these integers exactly. The counter wrapped between the first two.
RAPL_BEFORE_WRAP = 261439212122
RAPL_AFTER_WRAP = 708460527
RAPL_NEXT = 2122114318
RAPL_MAX_RANGE = 262143328850   # max_energy_range_uj of Intel package zones (not in that issue)


def test_rapl_wraparound_on_recorded_counters():
    wrapped = power_mw(RAPL_BEFORE_WRAP, RAPL_AFTER_WRAP, 0.0, 15.0, RAPL_MAX_RANGE)
    following = power_mw(RAPL_AFTER_WRAP, RAPL_NEXT, 15.0, 30.0, RAPL_MAX_RANGE)
    assert following == pytest.approx(94243.6, abs=0.1)            # no wrap: plain delta
    assert wrapped == pytest.approx(94171.8, abs=0.1)
    # The wrapped interval agrees with its neighbour within 0.1 %; the naive delta would be
    # about -17 kW.
    assert abs(wrapped - following) / following < 1e-3
    assert (RAPL_AFTER_WRAP - RAPL_BEFORE_WRAP) / 15.0 / 1000.0 < -1e7
    assert counter_delta_uj(5, 5, RAPL_MAX_RANGE) == 0


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_rapl_source_on_a_powercap_tree(tmp_path):
    root = tmp_path / "powercap"
    _write(root / "intel-rapl:0" / "name", "package-0")
    _write(root / "intel-rapl:0" / "energy_uj", str(RAPL_BEFORE_WRAP))
    _write(root / "intel-rapl:0" / "max_energy_range_uj", str(RAPL_MAX_RANGE))
    _write(root / "intel-rapl:0:0" / "name", "core")          # sub-zone, not summed
    _write(root / "intel-rapl:0:0" / "energy_uj", "1")
    _write(root / "intel-rapl:0:0" / "max_energy_range_uj", str(RAPL_MAX_RANGE))
    clock = iter([100.0, 115.0, 130.0])
    src = RaplSource(str(root), clock=lambda: next(clock), prime=False)
    _write(root / "intel-rapl:0" / "energy_uj", str(RAPL_AFTER_WRAP))
    first = src.read_mw()
    _write(root / "intel-rapl:0" / "energy_uj", str(RAPL_NEXT))
    second = src.read_mw()
    assert first["total"] == pytest.approx(94171.8, abs=0.1)
    assert second["total"] == pytest.approx(94243.6, abs=0.1)
    assert set(first) == {"package-0", "total"}
    assert "CPU package only" in src.caveat


def test_rapl_unreadable_or_absent_gives_a_reason(tmp_path):
    with pytest.raises(RuntimeError, match=r"^no .*nope$"):
        RaplSource(str(tmp_path / "nope"), prime=False)


# ------------------------------------------------------------------ INA3221 / INA238 sysfs

# AGX Orin on JetPack 5/6: two INA3221 (hwmon driver) at i2c 1-0040 and 1-0041; labels per
# NVIDIA's Orin power docs; channel 7 is the driver's "sum of shunt voltages"; in*_input mV,
# curr*_input mA. Values are ours (no recorded sysfs reads were found).
ORIN_CHANNELS = {
    "1-0040": [("VDD_GPU_SOC", 4992, 480), ("VDD_CPU_CV", 4992, 320), ("VIN_SYS_5V0", 4976, 944)],
    "1-0041": [("NC", 0, 0), ("VDDQ_VDD2_1V8AO", 4992, 60), ("NC", 0, 0)],
}


def make_orin_sysfs(root: Path) -> Path:
    for addr, chans in ORIN_CHANNELS.items():
        dev = root / "bus/i2c/devices" / addr
        _write(dev / "name", "ina3221")
        hw = dev / "hwmon" / ("hwmon3" if addr.endswith("40") else "hwmon4")
        for i, (label, mv, ma) in enumerate(chans, 1):
            _write(hw / f"in{i}_label", label)
            _write(hw / f"in{i}_input", str(mv))
            _write(hw / f"curr{i}_input", str(ma))
            _write(hw / f"curr{i}_max", "32760")
            _write(hw / f"curr{i}_crit", "32760")
        _write(hw / "in7_label", "sum of shunt voltages")
        _write(hw / "in7_input", "1234")
    _write(root / "bus/i2c/devices/1-0050/name", "24c02")   # an EEPROM: ignored
    return root


def test_ina3221_hwmon_agx_orin(tmp_path):
    root = make_orin_sysfs(tmp_path)
    chans, notes = discover(str(root))
    assert [c.rail for c in chans] == ["VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"]
    assert any("sum of shunt" in n for n in notes) and any("'NC'" in n for n in notes)
    src = InaSysfsSource(str(root))
    mw = src.read_mw()
    assert mw["VDD_GPU_SOC"] == pytest.approx(4992 * 480 / 1000)
    assert mw["VIN_SYS_5V0"] == pytest.approx(4976 * 944 / 1000)
    assert mw["total"] == pytest.approx(sum(v * i / 1000 for a in ORIN_CHANNELS.values()
                                            for _, v, i in a))
    assert "not board input power" in src.caveat and "VDD_GPU_SOC" in src.caveat
    # a reading changes when the files do: it reads the files every time
    _write(root / "bus/i2c/devices/1-0040/hwmon/hwmon3/curr1_input", "960")
    assert src.read_mw()["VDD_GPU_SOC"] == pytest.approx(4992 * 960 / 1000)


def test_ina3221_iio_jetpack4_and_ina238_thor(tmp_path):
    # JetPack 4 (TX2): ina3221x IIO driver, rail_name_N and in_power N_input in mW.
    dev = tmp_path / "tx2/bus/i2c/devices/0-0040/iio:device0"
    _write(dev.parent / "name", "ina3221x")
    for i, (name, mw) in enumerate([("VDD_IN", 5297), ("VDD_SYS_GPU", 182), ("VDD_SYS_CPU", 1917)]):
        _write(dev / f"rail_name_{i}", name)
        _write(dev / f"in_power{i}_input", str(mw))
        _write(dev / f"in_voltage{i}_input", "19000")
        _write(dev / f"in_current{i}_input", "100")
    tx2 = InaSysfsSource(str(tmp_path / "tx2")).read_mw()
    assert tx2 == {"VDD_IN": 5297.0, "VDD_SYS_GPU": 182.0, "VDD_SYS_CPU": 1917.0, "total": 5297.0}
    # Thor: module INA3221 plus the carrier's INA238 (power1_input in uW) -> VIN is the total.
    thor = tmp_path / "thor/bus/i2c/devices"
    _write(thor / "2-0040/name", "ina3221")
    for i, (label, mv, ma) in enumerate([("VDD_GPU", 5000, 985), ("VDD_CPU_SOC_MSS", 5000, 1742)], 1):
        _write(thor / f"2-0040/hwmon/hwmon1/in{i}_label", label)
        _write(thor / f"2-0040/hwmon/hwmon1/in{i}_input", str(mv))
        _write(thor / f"2-0040/hwmon/hwmon1/curr{i}_input", str(ma))
    _write(thor / "2-0044/name", "ina238")
    _write(thor / "2-0044/hwmon/hwmon2/power1_input", "23150000")
    src = InaSysfsSource(str(tmp_path / "thor"))
    mw = src.read_mw()
    assert mw["VIN"] == pytest.approx(23150.0) and mw["total"] == pytest.approx(23150.0)
    assert "VIN" in src.caveat and "carrier board" in src.caveat


def test_our_sysfs_reader_agrees_with_jetson_stats_on_the_same_tree(tmp_path):
    # jetson-stats' own reader (installed package, not a copy) on the recreated tree; its
    # 'power' per rail and 'tot' must match ours, and power_from_jtop must keep them.
    jpower = pytest.importorskip("jtop.core.power")
    root = make_orin_sysfs(tmp_path)
    svc = jpower.PowerService.__new__(jpower.PowerService)
    svc._power_avg = {}
    svc._power_sensor = jpower.find_all_i2c_power_monitor(str(root / "bus/i2c/devices"))
    status = svc.get_status()
    theirs, caveat = power_from_jtop(status)
    ours = InaSysfsSource(str(root)).read_mw()
    assert set(theirs) == set(ours)
    for k in ours:
        # jtop truncates each rail to an int mW, so its total may be up to 1 mW per rail low
        assert theirs[k] == pytest.approx(ours[k], abs=1.0 if k != "total" else len(ours) - 1)
    assert "sum of rails" in caveat


def test_rails_semantics():
    total, inp, cav = rails_mod.total_and_caveat({"VDD_IN": 5000, "VDD_CPU_GPU_CV": 1200,
                                                  "VDD_SOC": 1400}, "x")
    assert (total, inp) == (5000, "VDD_IN") and "module input" in cav
    total, inp, _ = rails_mod.total_and_caveat({"NC": 9, "A": 1, "B": 2}, "x")
    assert (total, inp) == (3, None)


# ------------------------------------------------------------------ detection, Monitor

def test_detect_here_returns_none_and_says_why(monkeypatch):
    monkeypatch.delenv("EDGEBENCH_POWER_SOURCE", raising=False)
    if Path("/sys/bus/i2c/devices").is_dir() or Path("/sys/class/powercap").is_dir():
        pytest.skip("this machine has power-sensor sysfs; the no-sensor case cannot be checked")
    src, reason = sources.detect()
    assert src is None
    for name in ("ina3221-sysfs", "jtop", "tegrastats", "nvml", "rapl"):
        assert f"{name}:" in reason
    assert reason.index("ina3221-sysfs") < reason.index("jtop") < reason.index("rapl")


def test_detect_env_switches(monkeypatch):
    monkeypatch.setenv("EDGEBENCH_POWER_SOURCE", "none")
    assert sources.detect() == (None, "power sampling turned off (EDGEBENCH_POWER_SOURCE=none)")
    monkeypatch.setenv("EDGEBENCH_POWER_SOURCE", "bogus")
    src, reason = sources.detect()
    assert src is None and "not a known source" in reason


def test_detect_takes_the_first_source_that_reads(tmp_path, monkeypatch):
    monkeypatch.delenv("EDGEBENCH_POWER_SOURCE", raising=False)
    root = make_orin_sysfs(tmp_path)

    def broken():
        raise PermissionError("denied")

    src, reason = sources.detect([("broken", broken), ("ina3221-sysfs", lambda: InaSysfsSource(str(root)))])
    assert isinstance(src, InaSysfsSource) and reason == ""


def test_monitor_integrates_an_ina_source(tmp_path):
    root = make_orin_sysfs(tmp_path)
    mon = Monitor(interval_s=0.02, power=InaSysfsSource(str(root)),
                  device_state=lambda: ds.sample_state(str(tmp_path)))
    mon.start()
    with mon.window() as w:
        w.n_items = 10
        import time
        time.sleep(0.1)
    mon.stop()
    power, reason, mj = mon.power_summary()
    expected_w = sum(v * i / 1000 for a in ORIN_CHANNELS.values() for _, v, i in a) / 1000
    assert power["mean"] == pytest.approx(expected_w)
    assert set(power["rails"]) == {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}
    assert power["source"] == "ina3221-sysfs" and "not board input power" in power["caveat"]
    assert mj is None and "idle" in reason          # idle not measured -> no net energy


# ------------------------------------------------------------------ device state

NV_TEGRA_RELEASE = {
    # lesomnus/tegra-exporter stats/parse_test.go and rbonghi/jetson_stats issue #711
    "# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, DATE: Mon Jun 16 16:07:13 UTC 2025": "36.4.4",
    "# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Fri Aug 22 00:55:42 UTC 2025": "38.2.0",
    "# R39 (release), REVISION: 2.0, GCID: 45755727, BOARD: generic, EABI: aarch64, DATE: Mon Jun  1 09:28:48 PM UTC 2026": "39.2.0",
}


def test_l4t_and_jetpack_parsing():
    for text, l4t in NV_TEGRA_RELEASE.items():
        assert ds.parse_l4t(text) == l4t
    assert ds.jetpack_for_l4t("36.4.4") == "6.2.1" and ds.jetpack_for_l4t("36.3.0") == "6.0"
    assert ds.parse_l4t("R32 something") is None
    assert ds.parse_nvpmodel("NV Power Mode: MAXN\n0\n") == {"name": "MAXN", "id": 0}
    assert ds.parse_nvpmodel("NVPM WARN: x\nNV Power Mode: MODE_30W\n2\n") == {"name": "MODE_30W", "id": 2}
    assert ds.parse_cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 0\n") == "9.3.0"


def make_jetson_root(root: Path, locked: bool) -> Path:
    _write(root / "etc/nv_tegra_release", next(iter(NV_TEGRA_RELEASE)))
    (root / "proc/device-tree").mkdir(parents=True)
    (root / "proc/device-tree/model").write_bytes(b"NVIDIA Jetson AGX Orin Developer Kit\x00")
    (root / "proc/device-tree/compatible").write_bytes(
        b"nvidia,p3737-0000+p3701-0005\x00nvidia,p3701-0005\x00nvidia,tegra234\x00")
    _write(root / "proc/meminfo", "MemTotal:       64335836 kB\nMemFree:        50000000 kB\n"
                                  "Buffers:          100000 kB\nCached:          2000000 kB\n"
                                  "NvMapMemUsed:     512000 kB")
    _write(root / "usr/local/cuda/version.json", json.dumps({"cuda": {"version": "12.6.68"}}))
    for pol in ("policy0", "policy4", "policy8"):
        d = root / "sys/devices/system/cpu/cpufreq" / pol
        _write(d / "scaling_governor", "schedutil")
        _write(d / "scaling_min_freq", "2201600" if locked else "115200")
        _write(d / "scaling_max_freq", "2201600")
        _write(d / "cpuinfo_max_freq", "2201600")
        _write(d / "scaling_cur_freq", "2201600")
    for cpu in range(3):
        _write(root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq", "2201600")
    g = root / "sys/class/devfreq/17000000.gpu"
    _write(g / "min_freq", "1300500000" if locked else "306000000")
    _write(g / "max_freq", "1300500000")
    _write(g / "cur_freq", "1300500000")
    _write(g / "governor", "nvhost_podgov")
    for i, (name, temp) in enumerate([("cpu-thermal", 52562), ("gpu-thermal", 48437),
                                      ("cv0-thermal", -256000)]):
        z = root / f"sys/class/thermal/thermal_zone{i}"
        _write(z / "type", name)
        _write(z / "temp", str(temp))
        _write(z / "trip_point_0_type", "passive")
        _write(z / "trip_point_0_temp", "99000")
    return root


def _no_commands(cmd):
    raise FileNotFoundError(f"{cmd[0]} not found on PATH")


def test_device_state_on_a_recreated_jetson_tree(tmp_path):
    root = make_jetson_root(tmp_path, locked=False)
    st = ds.device_state(str(root), run=_no_commands)
    assert st["kind"] == "jetson"
    assert st["board_model"] == "NVIDIA Jetson AGX Orin Developer Kit"
    assert st["soc"] == "nvidia,tegra234" and st["l4t"] == "36.4.4" and st["jetpack"] == "6.2.1"
    assert st["cuda"] == "12.6.68"
    assert st["nvpmodel"] is None and "nvpmodel" in st["unavailable"]["nvpmodel"]
    assert st["jetson_clocks"] == "off" and st["gpu_devfreq"]["max_mhz"] == pytest.approx(1300.5)
    assert st["thermal_trips_c"]["cpu-thermal"] == 99.0
    assert is_agx_orin(st)
    assert all(k in st["unavailable"] for k, v in st.items() if v is None)
    sample = ds.sample_state(str(root))
    assert sample["temps_c"] == {"cpu-thermal": 52.562, "gpu-thermal": 48.437}  # -256 dropped
    assert sample["gpu_mhz"] == pytest.approx(1300.5)
    assert sample["cpu_mhz"]["max"] == pytest.approx(2201.6)
    assert ds.nvmap_used_mb(str(root)) == pytest.approx(500.0)
    locked = ds.device_state(str(make_jetson_root(tmp_path / "locked", locked=True)), run=_no_commands)
    assert locked["jetson_clocks"] == "on"


def test_device_state_here_never_raises_and_gives_reasons():
    st = ds.device_state()
    assert st["kind"] in ("linux", "jetson") or st["kind"]
    assert st["cpu_count"] == os.cpu_count()
    for key, value in st.items():
        if value is None:
            assert key in st["unavailable"], f"{key} is None without a reason"


def test_a_machine_without_the_cuda_toolkit_says_where_it_looked(tmp_path):
    """A GPU server with only the driver and pip's CUDA libraries (the H100 runs) has no
    /usr/local/cuda: the reason says so and points at the driver's version instead."""
    from edgebench.telemetry.nvml import cuda_version_str

    st = ds.device_state(str(tmp_path), run=_no_commands)
    assert st["cuda"] is None
    assert "/usr/local/cuda" in st["unavailable"]["cuda"]
    assert "cuda_driver" in st["unavailable"]["cuda"]
    # NVML's integer (nvmlSystemGetCudaDriverVersion): major * 1000 + minor * 10
    assert [cuda_version_str(v) for v in (13000, 12060, 12020)] == ["13.0", "12.6", "12.2"]


def test_clock_warnings():
    jetson = {"kind": "jetson", "nvpmodel": {"name": "MODE_30W", "id": 2}, "jetson_clocks": "off"}
    w = ds.clock_warnings(jetson, [])
    assert len(w) == 2 and "not MAXN" in w[0] and "not locked" in w[1]
    good = {"kind": "jetson", "nvpmodel": {"name": "MAXN", "id": 0}, "jetson_clocks": "on",
            "gpu_devfreq": {"max_mhz": 1300.5}, "cpu_policies": [{"max_khz": 2201600}],
            "thermal_trips_c": {"cpu-thermal": 99.0}}
    steady = [{"gpu_mhz": 1300.5, "cpu_mhz": {"min": 2201.6}, "temps_c": {"cpu-thermal": 60.0}}] * 3
    assert ds.clock_warnings(good, steady) == []
    throttled = steady + [{"gpu_mhz": 900.0, "cpu_mhz": {"min": 1500.0}, "temps_c": {"cpu-thermal": 96.5}}]
    w = ds.clock_warnings(good, throttled)
    assert any("GPU clock varied" in x for x in w)
    assert any("GPU clock fell to 900" in x for x in w)
    assert any("CPU clock fell to 1500" in x for x in w)
    assert any("cpu-thermal reached 96.5" in x for x in w)
    assert ds.clock_warnings({"kind": "linux", "cpu_governors": ["powersave"]}, []) == [
        "CPU frequency governor is powersave, not performance: clocks may change during timing"]


# ------------------------------------------------------------------ reference figures

def test_paper_figures():
    rows = paper_figures("resnet152", "tensorrt-fp16")
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["latency_per_sample"]["value"] == 2.28
    assert by_metric["power"]["value"] == 28.30 and by_metric["power"]["unit"] == "W"
    assert by_metric["system_memory"]["low"] == 14.0 and by_metric["system_memory"]["model"] == "*"
    ort = {r["metric"]: r for r in paper_figures("resnet152", "onnxruntime")}
    assert ort["latency_per_sample"]["bound"] == "lower"        # "over 280 ms"
    assert paper_figures("squeezenet1_1", "pytorch", "latency_per_sample")[0]["bound"] == "upper"
    assert paper_figures("squeezenet1_1", "tvm", "failure")[0]["value"] is None
    assert paper_figures("nonexistent_model", "tensorrt-fp16") == [
        r for r in paper_figures("nonexistent_model", "tensorrt-fp16") if r["model"] == "*"]
    assert not is_agx_orin({"board_model": "NVIDIA Jetson Orin Nano Developer Kit"})
    assert not is_agx_orin(None)


def test_reference_copy_matches_shared():
    shared = REPO.parent / "shared" / "reference" / "orin-paper-2025.csv"
    if not shared.is_file():
        pytest.skip("../shared not present")
    assert (REPO / "edgebench/reference_data/orin-paper-2025.csv").read_bytes() == shared.read_bytes()


# ------------------------------------------------------------------ CLI

def cli(*args, stdin: str | None = None):
    return subprocess.run([sys.executable, "-m", "edgebench.telemetry", *args], cwd=REPO,
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_cli_parses_a_file_and_stdin():
    f = FIX / "agx_orin_64gb_jetpack6.2.1_r36.4.4.txt"
    p = cli("parse-tegrastats", str(f))
    assert p.returncode == 0, p.stderr
    recs = [json.loads(l) for l in p.stdout.splitlines()]
    assert [r["rails_mw"]["VIN_SYS_5V0"] for r in recs] == [4707, 4607, 4707]
    assert all(r["ram_total_mb"] == 62841 for r in recs)
    text = (FIX / "tx2_jetpack4.txt").read_text() + "not a tegrastats line\n"
    p = cli("parse-tegrastats", stdin=text)
    assert p.returncode == 0
    assert json.loads(p.stdout)["rails_mw"]["VDD_IN"] == 5297
    assert "warning" in p.stderr and ":2:" in p.stderr


def test_cli_exit_codes_and_help():
    p = cli("parse-tegrastats", stdin="garbage\nmore garbage\n")
    assert p.returncode == 1 and p.stdout == "" and "no tegrastats line parsed" in p.stderr
    assert cli("parse-tegrastats", "/nonexistent/file").returncode == 2
    h = cli("parse-tegrastats", "--help")
    assert h.returncode == 0 and "rails_mw" in h.stdout and "INSTANTANEOUS" in h.stdout


def test_tegrastats_source_reads_a_replayed_recording(tmp_path):
    # The subprocess side of TegrastatsSource, fed by replaying recorded lines (Orin JP6)
    # through a script that takes tegrastats' arguments; no device is being imitated beyond
    # printing what one printed.
    from edgebench.telemetry.tegrastats import TegrastatsSource

    rec = FIX / "agx_orin_64gb_jetpack6.2.1_r36.4.4.txt"
    script = tmp_path / "replay-tegrastats"
    script.write_text(f"#!/bin/sh\n[ \"$1\" = --interval ] || exit 2\n"
                      f"while read -r l; do echo \"$l\"; sleep 0.05; done < '{rec}'\nexec sleep 30\n")
    script.chmod(0o755)
    src = TegrastatsSource(str(script), interval_ms=50)
    try:
        import time
        time.sleep(0.3)
        mw = src.read_mw()
        assert mw == {"VDD_GPU_SOC": 2412, "VDD_CPU_CV": 1607, "VIN_SYS_5V0": 4707,
                      "total": 8726}                           # the last recorded line
        assert "not board input power" in src.caveat
        time.sleep(2.2)                                        # replay has gone silent
        with pytest.raises(RuntimeError, match="stale"):
            src.read_mw()
    finally:
        src.close()
    assert src._proc.poll() is not None
