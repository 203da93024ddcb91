"""tegrastats: parsing recorded lines from every Jetson generation, energy over a recorded
series, the ``parse-tegrastats`` CLI, and TegrastatsSource on a replayed recording.

Recorded inputs and where they come from: tests/fixtures/tegrastats/README.md.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.telemetry import maths
from edgebench.telemetry.tegrastats import TegrastatsParseError, parse_line

REPO = Path(__file__).resolve().parents[1]
FIX = Path(__file__).resolve().parent / "fixtures" / "tegrastats"


def lines(name: str) -> list[str]:
    return [l for l in (FIX / name).read_text(encoding="utf-8").splitlines() if l.strip()]


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
    text = (FIX / "tx2_jetpack4.txt").read_text(encoding="utf-8") + "not a tegrastats line\n"
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
                      f"while read -r l; do echo \"$l\"; sleep 0.05; done < '{rec}'\nexec sleep 30\n", encoding="utf-8")
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
