"""--power-modes' parts that need no board: nvpmodel's output parsed as jetson-stats parses it
(the formats recorded from boards, quoted below), the user's mode list resolved, the reboot
rule, the settle wait, and the power-source cross-check of the Monitor. The sweep itself
runs in the emulated Orin (tests/test_emulated_lane.py), against its nvpmodel stand-in."""
from __future__ import annotations

import pytest

from edgebench import powermodes as pm

# `nvpmodel -p --verbose` of an AGX Orin as jetson-stats recorded it (rbonghi/jetson_stats,
# tests/nvpmodel, show_verbose_orin()), the lines the parser reads (CPU_ONLINE, EMC, DLA and
# PVA lines left out).
VERBOSE_ORIN = """\
NVPM VERB: Config file: /etc/nvpmodel.conf
NVPM VERB: parsing done for /etc/nvpmodel.conf
succeed to parse file /etc/nvpmodel.conf.
NVPM VERB: PM_CONFIG: DEFAULT=MODE_30W(2)
NVPM VERB: PARAM TYPE=FILE NAME=CPU_ONLINE
NVPM VERB: CORE_0 /sys/devices/system/cpu/cpu0/online
NVPM VERB:
NVPM VERB: POWER_MODEL: ID=0 NAME=MAXN
NVPM VERB: TPC_POWER_GATING TPC_PG_MASK 0
NVPM VERB: CPU_A78_0 MIN_FREQ 729600
NVPM VERB: CPU_A78_0 MAX_FREQ 2147483647
NVPM VERB: POWER_MODEL: ID=1 NAME=MODE_15W
NVPM VERB: TPC_POWER_GATING TPC_PG_MASK 248
NVPM VERB: CPU_A78_0 MAX_FREQ 1113600
NVPM VERB: POWER_MODEL: ID=2 NAME=MODE_30W
NVPM VERB: TPC_POWER_GATING TPC_PG_MASK 240
NVPM VERB: CPU_A78_0 MAX_FREQ 1728000
NVPM VERB: POWER_MODEL: ID=3 NAME=MODE_50W
NVPM VERB: TPC_POWER_GATING TPC_PG_MASK 0
NVPM VERB: CPU_A78_0 MAX_FREQ 1497600
NVPM VERB:
"""
# A real AGX Orin answering a mode change that needs a reboot with no "yes" (captured from a
# device: the reboot prompt, then the refusal; nvpmodel exits 0 all the same).
DECLINED = """\
NVPM WARN: Golden image context is already created
NVPM WARN: Reboot required for changing to this power mode: 0
NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:
NVPM ERROR: bad input!
NVPM ERROR: optMask is 1, no request for power mode
"""


def _modes():
    modes, default = pm.parse_modes(VERBOSE_ORIN)
    return modes, default


def test_modes_parsed_as_jtop_parses_them():
    modes, default = _modes()
    assert [(m.id, m.name, m.tpc_mask) for m in modes] == [
        (0, "MAXN", "0"), (1, "MODE_15W", "248"), (2, "MODE_30W", "240"), (3, "MODE_50W", "0")]
    assert default == 2


def test_query_with_and_without_a_warning_line_first():
    assert pm.parse_query("NV Power Mode: MODE_30W\n2\n") == ("MODE_30W", 2)
    assert pm.parse_query("NVPM WARN: fan mode is not set!\nNV Power Mode: MAXN\n0\n") == ("MAXN", 0)
    assert pm.parse_query("nvpmodel: command failed\n") is None


def test_resolve_names_short_names_and_ids():
    modes, _ = _modes()
    assert [m.id for m in pm.resolve("MAXN,30W,15W", modes)] == [0, 2, 1]
    assert [m.id for m in pm.resolve("mode_50w, 0", modes)] == [3, 0]
    with pytest.raises(ValueError, match="no power mode '45W'.*0 MAXN, 1 MODE_15W, 2 MODE_30W, 3 MODE_50W"):
        pm.resolve("MAXN,45W", modes)
    with pytest.raises(ValueError, match="given twice"):
        pm.resolve("0,MAXN", modes)
    with pytest.raises(ValueError, match="no mode given"):
        pm.resolve(" , ", modes)


def test_reboot_rule_is_the_tpc_mask():
    modes, _ = _modes()
    maxn, w15, w30, w50 = modes
    assert pm.reboot_needed(maxn, w50) == "" and pm.reboot_needed(w50, maxn) == ""
    why = pm.reboot_needed(maxn, w30)
    assert "needs a reboot" in why and "0 vs 240" in why and "nvpmodel -m 2" in why
    assert pm.reboot_needed(w30, w15)


def test_a_declined_reboot_is_a_failed_switch():
    """nvpmodel exits 0 after refusing: the text decides (the recorded answer above)."""
    calls = []

    def run(cmd, input=None, timeout=0):
        calls.append((cmd, input))
        if cmd[1] == "-p":
            return 0, VERBOSE_ORIN
        if cmd[1] == "-m":
            return 0, DECLINED
        return 0, "NV Power Mode: MODE_30W\n2\n"

    nvp = pm.Nvpmodel("nvpmodel", run=run)
    with pytest.raises(pm.PowerModeError, match="optMask is 1, no request for power mode"):
        nvp.switch(nvp.modes()[0])
    assert (["nvpmodel", "-m", "0"], "NO\n") in calls      # never answers yes to a reboot


def test_settle_waits_for_equal_reads_and_gives_up_in_time():
    reads = iter([{"cpu_max_mhz": {"policy0": 2201.6}}, {"cpu_max_mhz": {"policy0": 1497.6}},
                  {"cpu_max_mhz": {"policy0": 1497.6}}, {"cpu_max_mhz": {"policy0": 1497.6}}])
    snap, waited, ok = pm.settle(lambda: next(reads), timeout_s=5, interval_s=0.0, reads=3)
    assert ok and snap["cpu_max_mhz"]["policy0"] == 1497.6
    moving = iter(range(1000))
    snap, waited, ok = pm.settle(lambda: {"cpu_max_mhz": next(moving)}, timeout_s=0.05,
                                 interval_s=0.01, reads=3)
    assert not ok and waited >= 0.05


def test_monitor_power_check_reads_a_second_source_over_the_same_window(tmp_path):
    """EDGEBENCH_POWER_CHECK's figures: the same INA3221 tree read by two sources agrees to
    the watt; the record says which source checked and over how many samples."""
    from edgebench.telemetry.ina3221 import InaSysfsSource
    from edgebench.telemetry.monitor import Monitor
    from test_telemetry import make_orin_sysfs

    root = make_orin_sysfs(tmp_path)
    mon = Monitor(power=InaSysfsSource(str(root)), interval_s=0.02)
    mon.check = InaSysfsSource(str(root))
    mon.start()
    with mon.window() as w:
        w.n_items = 10
        import time
        time.sleep(0.15)
    mon.stop()
    power, _, _ = mon.power_summary(w)
    check = power["check"]
    assert check["source"] == "ina3221-sysfs" and check["n_samples"] >= 3
    assert check["mean"] == pytest.approx(power["mean"]) and check["rel_diff"] == pytest.approx(0.0)


def test_power_check_env_names_an_unknown_source(monkeypatch):
    from edgebench.telemetry.sources import check_source

    monkeypatch.setenv("EDGEBENCH_POWER_CHECK", "bogus")
    src, why = check_source("jtop")
    assert src is None and "not a known source" in why
    monkeypatch.setenv("EDGEBENCH_POWER_CHECK", "jtop")
    assert check_source("jtop") == (None, "")          # the same source: nothing to check
