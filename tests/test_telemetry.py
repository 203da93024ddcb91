"""Telemetry: power maths, the power-source readers (RAPL, INA3221/INA238) on recreated sysfs
layouts, detection on this machine, and the Monitor. (tegrastats: test_tegrastats.py; device
state, clock warnings and the study's reference figures: test_device_state.py.)

Recorded inputs: the RAPL counter values quoted in test_rapl_wraparound_on_recorded_counters.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.telemetry import maths
from edgebench.telemetry import rails as rails_mod
from edgebench.telemetry import sources
from edgebench.telemetry.device_state import sample_state
from edgebench.telemetry.ina3221 import InaSysfsSource, discover
from edgebench.telemetry.jtop_source import power_from_jtop
from edgebench.telemetry.monitor import Monitor
from edgebench.telemetry.rapl import RaplSource, counter_delta_uj, power_mw
from testlib import record_validator


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
    path.write_text(text + "\n", encoding="utf-8")


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
    if src is not None:                      # an Orin, a GPU machine (NVML), x86 with RAPL
        src.close()
        pytest.skip(f"this machine has a power sensor ({src.name}): the no-sensor case cannot be checked")
    for name in ("ina3221-sysfs", "jtop", "tegrastats", "nvml", "rapl"):
        assert f"{name}:" in reason
    assert reason.index("ina3221-sysfs") < reason.index("jtop") < reason.index("rapl")


def test_the_jtop_source_starts_no_probe_where_no_service_listens():
    """jtop() starts a thread of subprocess probes (dpkg -l, gcc, ldconfig) before connecting;
    every cell tries this source, and on a machine without the service such a probe, still
    running at the cell's memory baseline, put a forked child's RSS into it (CI 2026-11-26:
    baseline 886.6 MB, peak 485.1 MB). Without the socket, nothing may be started."""
    import sys
    import threading
    import time

    pytest.importorskip("jtop")
    from edgebench.telemetry.jtop_source import JtopSource, _service_socket

    if Path(_service_socket()).exists():
        pytest.skip(f"{_service_socket()} exists: a jtop service listens on this machine")
    started: list[str] = []
    watching = [True]
    # Audit hooks cannot be removed: this one stops recording when the test ends.
    sys.addaudithook(lambda ev, args: started.append(str(args[0]))
                     if watching[0] and ev in ("subprocess.Popen", "os.fork") else None)
    threads = set(threading.enumerate())
    try:
        with pytest.raises(RuntimeError, match="jtop.sock does not exist"):
            JtopSource()
        time.sleep(0.5)          # the probe thread's first subprocess comes within ~0.1 s
    finally:
        watching[0] = False
    assert started == [] and set(threading.enumerate()) <= threads


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


def test_a_reading_that_never_changes_over_a_window_is_said(tmp_path, monkeypatch):
    """A reader that hands back the same total for every sample of a window (a starved jtop
    service did so for 16 s in CI, 2026-11-27) gets a note in the record; a window in which a
    rail moved gets none. The real INA3221 reader on a rail file tree: static files are the
    one reading, and a rewritten current is the move."""
    import time

    from edgebench.telemetry import monitor as monitor_mod

    monkeypatch.setattr(monitor_mod, "UNCHANGED_MIN_SPAN_S", 0.3)     # 2 s on a board
    root = make_orin_sysfs(tmp_path)
    cpu_current = root / "bus/i2c/devices/1-0040/hwmon/hwmon3/curr2_input"   # VDD_CPU_CV

    def window_power(move: bool) -> dict:
        mon = Monitor(interval_s=0.02, power=InaSysfsSource(str(root))).start()
        with mon.window() as w:
            w.n_items = 10
            # 0.6 s each side of the move: with 0.2 (11-28) and 0.35 (11-29) the test failed
            # once each in the fast lane, never alone or under load; a wider window leaves the
            # sampler thread room when the other test worker starves it
            time.sleep(0.6)
            if move:
                cpu_current.write_text("640")
            time.sleep(0.6)
        mon.stop()
        return mon.power_summary()[0]

    still = window_power(move=False)
    assert "ina3221-sysfs's reading did not change over the window" in still["unchanged"], still
    moved = window_power(move=True)
    assert "unchanged" not in moved and moved["mean"] > still["mean"], moved


def test_a_window_with_a_long_stretch_without_power_samples_says_so(tmp_path, monkeypatch):
    """A source that gives no sample for a stretch of a window (jtop's service sampling slowly
    or dropping its client: the source then returns nothing) leaves the figure interpolated
    there, and the record says for how long. The real INA3221 reader: sampled every 20 ms
    the window has no gap; sampled only at the window's edges it has one as long as the
    window."""
    import time

    from edgebench.telemetry import monitor as monitor_mod

    monkeypatch.setattr(monitor_mod, "POWER_GAP_NOTE_S", 0.3)     # 3 s on a board
    root = make_orin_sysfs(tmp_path)

    def window_power(interval_s: float) -> dict:
        mon = Monitor(interval_s=interval_s, power=InaSysfsSource(str(root))).start()
        with mon.window() as w:
            w.n_items = 10
            time.sleep(0.6)
        mon.stop()
        return mon.power_summary()[0]

    dense = window_power(0.02)
    assert "gap" not in dense, dense
    edges = window_power(30.0)                  # the monitor samples at the edges only
    assert "ina3221-sysfs gave no sample for 0.6 s of the 0.6 s window" in edges["gap"], edges
    assert edges["mean"] == pytest.approx(dense["mean"])
    # the records' schema knows the field (power_w has no other properties)
    power_schema = record_validator().schema["properties"]["power_w"]
    edges["source_events"] = ["jtop: the kind of line a source adds"]
    import jsonschema
    jsonschema.validate(edges, power_schema)


def test_a_power_source_that_fails_during_the_task_is_named_with_its_reason(tmp_path, monkeypatch):
    """A source that fails while the task runs keeps its name in the record, and the record
    says why it stopped (power_reason) and for how long it gave nothing (gap). Seen in CI on
    2026-11-27: jtop's service stopped for good when its `nvpmodel -q` call passed 4 s under
    QEMU, and the record said source null with no reason."""
    import shutil
    import time

    from edgebench.telemetry import monitor as monitor_mod

    class ClosedAware(InaSysfsSource):           # the real reader; close() is remembered
        closed = False

        def close(self):
            self.closed = True

    monkeypatch.setattr(monitor_mod, "POWER_GAP_NOTE_S", 0.2)          # 3 s on a board
    root = make_orin_sysfs(tmp_path)
    source = ClosedAware(str(root))
    mon = Monitor(interval_s=0.02, power=source).start()
    with mon.window() as w:
        w.n_items = 10
        time.sleep(0.1)
        shutil.rmtree(root / "bus")                 # the rails' files are gone mid-window
        time.sleep(0.4)
        assert source.closed                        # closed when it failed, not left open
    mon.stop()
    power, reason, _ = mon.power_summary()
    assert power["source"] == "ina3221-sysfs" and power["mean"] > 0, power
    assert reason.startswith("power source ina3221-sysfs failed: "), reason
    assert power["gap"].startswith("ina3221-sysfs gave no sample for "), power


def test_monitor_integrates_an_ina_source(tmp_path):
    root = make_orin_sysfs(tmp_path)
    mon = Monitor(interval_s=0.02, power=InaSysfsSource(str(root)),
                  device_state=lambda: sample_state(str(tmp_path)))
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
