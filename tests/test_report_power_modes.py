"""The report of a --power-modes run: a "Power modes" section per model (mode x variant rows
with clocks, latency, throughput, energy per inference, power, or why a cell failed), a plot of
latency and throughput against energy per model, and summary rows/CSV that keep each mode's
cells apart. Records are hand-made; every figure asserted is one of theirs."""
from __future__ import annotations

import csv

from edgebench import report, report_format, report_powermodes

FAIL = "power mode MODE_15W: nvpmodel -m 1 failed: NVPM ERROR: failed to set power mode"
NO_SENSOR = "no power sensor readable (INA3221 rails absent)"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# mode -> (nvpmodel id, jetson_clocks, CPU max MHz, GPU max MHz)
MODES = {"MAXN": (0, True, 2201.6, 1300.5), "MODE_50W": (3, False, 1497.6, 828.75),
         "MODE_30W": (2, False, 1728.0, 624.75)}
# (mode, variant) -> (p50 ms, samples/s, best batch, latency mJ, throughput mJ, latency W, throughput W)
FIGS = {("MAXN", "pytorch"): (8.0, 400.0, 16, 120.0, 40.0, 30.0, 35.0),
        ("MAXN", "tensorrt-fp16"): (2.0, 2000.0, 32, 30.0, 10.0, 28.0, 33.0),
        ("MODE_50W", "pytorch"): (10.0, 320.0, 16, 100.0, 35.0, 20.0, 22.0),
        ("MODE_50W", "tensorrt-fp16"): (2.5, 1600.0, 32, 25.0, 8.5, 19.0, 21.0),
        ("MODE_30W", "pytorch"): (16.0, 200.0, 8, 90.0, 30.0, 12.0, 14.0),
        ("MODE_30W", "tensorrt-fp16"): (4.0, 1000.0, 32, 20.0, 7.0, 11.0, 13.0)}


def lat(p50):
    return {"mean": p50, "p50": p50, "p90": p50 * 1.1, "p95": p50 * 1.2, "p99": p50 * 1.5,
            "min": p50 * 0.9, "max": p50 * 2}


def rec(model, variant, task, mode=None, state=True, **kw):
    r = {"run_id": "x", "model": model, "variant": variant, "task": task, "status": "ok",
         "reason": "", "device": {"kind": "jetson", "name": "Orin"}, "device_id": "",
         "weights": "pretrained", "power_w": None, "power_reason": None,
         "energy_mj_per_sample": None}
    if mode:
        mid, jc, cpu, gpu = MODES.get(mode, (1, False, None, None))
        r["power_mode"] = mode
    if mode and state:
        r["power_mode_state"] = {"id": mid, "name": mode, "jetson_clocks": jc, "settle_s": 5.0,
                                 "clocks": {"cpu_max_mhz": {"policy0": cpu, "policy4": cpu},
                                            "gpu_max_mhz": gpu}}
    r.update(kw)
    return r


def power(mean):
    return {"mean": mean, "idle": 8.0, "net": mean - 8.0, "source": "tegrastats"}


def records():
    out = []
    for (mode, v), (p50, sps, bb, e_lat, e_thr, w_lat, w_thr) in FIGS.items():
        out.append(rec("resnet50", v, "latency", mode, latency_ms=lat(p50), n=100,
                       power_w=power(w_lat), energy_mj_per_sample=e_lat))
        out.append(rec("resnet50", v, "throughput", mode, samples_per_s=sps, best_batch=bb,
                       by_batch=[], power_w=power(w_thr), energy_mj_per_sample=e_thr))
    # a rerun of one cell in MAXN: the later record wins within its mode only
    out.append(rec("resnet50", "tensorrt-fp16", "latency", "MAXN", latency_ms=lat(1.5), n=100,
                   power_w=power(29.0), energy_mj_per_sample=27.0))
    # the mode switch failed: every cell of that mode failed, saying why
    for v in ("pytorch", "tensorrt-fp16"):
        for t in ("latency", "throughput"):
            out.append(rec("resnet50", v, t, "MODE_15W", state=False, status="failed",
                           reason=FAIL))
    # a second model measured without a power sensor: figures, but no energy
    for mode in ("MAXN", "MODE_30W"):
        out.append(rec("mobilenetv2_100", "tensorrt-fp16", "latency", mode, latency_ms=lat(0.8),
                       n=100, power_reason=NO_SENSOR))
    return out


META = {"run_id": "x", "models": {}, "data": {"source": "sample", "n_images": 16}, "variants": {}}


def section_rows(md: str, model: str) -> dict[tuple[str, str], list[str]]:
    """(mode, variant) -> the cells of that row of ``model``'s power-mode table."""
    part = md.split(f"### {model} across power modes", 1)[1].split("\n### ", 1)[0]
    table = [ln for ln in part.splitlines() if ln.startswith("| ")]
    assert table[0].startswith("| mode | variant | jetson_clocks | CPU max MHz | GPU max MHz |")
    out = {}
    for ln in table[1:]:
        cells = [c.strip() for c in ln.strip().strip("|").split(" | ")]
        out[(cells[0], cells[1])] = cells
    return out


def test_power_modes_section_rows_failed_mode_and_plot(tmp_path):
    made = report.write_all(tmp_path, records(), dict(META))
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Power modes" in md and report_powermodes.PLOT_LINE in md
    rows = section_rows(md, "resnet50")
    # 4 modes x 2 variants, mode by mode in run order
    assert list(rows) == [(m, v) for m in ("MAXN", "MODE_50W", "MODE_30W", "MODE_15W")
                          for v in ("pytorch", "tensorrt-fp16")]
    assert rows[("MAXN", "pytorch")] == ["MAXN", "pytorch", "on", "2202", "1300", "8.00",
                                         "400.0 @ 16", "120.000", "40.000", "30.00", "35.00", "ok"]
    # the rerun replaced MAXN's tensorrt latency, and only MAXN's
    assert rows[("MAXN", "tensorrt-fp16")][5:8] == ["1.50", "2000.0 @ 32", "27.000"]
    assert rows[("MODE_30W", "tensorrt-fp16")] == [
        "MODE_30W", "tensorrt-fp16", "off", "1728", "625", "4.00", "1000.0 @ 32", "20.000",
        "7.000", "11.00", "13.00", "ok"]
    assert rows[("MODE_50W", "pytorch")][7:9] == ["100.000", "35.000"]
    failed = rows[("MODE_15W", "tensorrt-fp16")]
    assert failed[2:11] == ["–"] * 9            # no mode state, no figure for a failed cell
    assert failed[11] == ("failed (latency, throughput): power mode MODE_15W: nvpmodel -m 1 "
                          "failed: NVPM ERROR: failed to set power mode")
    # the model without energy: "–", its power_reason in a note, and no plot
    mob = section_rows(md, "mobilenetv2_100")
    assert mob[("MODE_30W", "tensorrt-fp16")][5] == "0.8"           # fmt: 3 significant digits below 1
    assert mob[("MODE_30W", "tensorrt-fp16")][7] == "–"
    assert f"- No plot for mobilenetv2_100: no energy figures: {NO_SENSOR}." in md
    assert ("- Energy – (no figure; none is estimated) for MAXN tensorrt-fp16 latency, "
            f"MODE_30W tensorrt-fp16 latency: {NO_SENSOR}.") in md
    # one PNG, for the model with energy figures, linked in the section and not under Plots
    png = tmp_path / "plots" / "power_modes_resnet50.png"
    assert "power_modes_resnet50.png" in made
    assert not (tmp_path / "plots" / "power_modes_mobilenetv2_100.png").exists()
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    section = md.split("## Power modes", 1)[1].split("\n## ", 1)[0]
    assert "![resnet50 across power modes](plots/power_modes_resnet50.png)" in section
    assert "plots/power_modes_resnet50.png" not in md.split("## Plots", 1)[1]


def test_summary_rows_and_csv_keep_power_modes_apart(tmp_path):
    recs = records()
    rows = {(r["model"], r["variant"], r["power_mode"]): r for r in report_format.summary_rows(recs)}
    assert len(rows) == 2 * 4 + 2
    assert rows[("resnet50", "tensorrt-fp16", "MODE_30W")]["latency_p50_ms"] == 4.0
    assert rows[("resnet50", "tensorrt-fp16", "MAXN")]["latency_p50_ms"] == 1.5
    # speed-up against pytorch in the same mode: 16 / 4 in MODE_30W, 10 / 2.5 in MODE_50W
    assert rows[("resnet50", "tensorrt-fp16", "MODE_30W")]["speedup_p50_vs_pytorch"] == 4.0
    assert rows[("resnet50", "tensorrt-fp16", "MODE_50W")]["speedup_p50_vs_pytorch"] == 4.0
    assert rows[("resnet50", "tensorrt-fp16", "MAXN")]["throughput_energy_mj_per_sample"] == 10.0
    report.write_all(tmp_path, recs, dict(META))
    with open(tmp_path / "summary.csv", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames[:3] == ["model", "variant", "power_mode"]
        csv_rows = list(reader)
    got = {(r["variant"], r["power_mode"]): r for r in csv_rows if r["model"] == "resnet50"}
    assert float(got[("pytorch", "MODE_30W")]["latency_p50_ms"]) == 16.0
    assert float(got[("pytorch", "MAXN")]["max_samples_per_s"]) == 400.0
    assert got[("pytorch", "MODE_15W")]["latency_status"] == "failed"
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    results = md.split("## Results", 1)[1].split("## Power modes", 1)[0]
    assert "| variant | power mode | equivalent |" in results
    assert "| tensorrt-fp16 | MODE_50W |" in results
    assert f"- pytorch @ MODE_15W: latency, throughput: {FAIL}" in results


def test_run_without_power_modes_has_no_section_and_no_column(tmp_path):
    recs = [{k: v for k, v in r.items() if k not in ("power_mode", "power_mode_state")}
            for r in records() if r.get("power_mode") == "MAXN"]
    assert report_powermodes.section(recs, META) == []
    assert report_powermodes.plot(recs, tmp_path) == []
    # an empty power_mode is no power mode either
    assert report_powermodes.section([dict(r, power_mode="") for r in recs], META) == []
    made = report.write_all(tmp_path, recs, dict(META))
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Power modes" not in md and "power mode" not in md
    assert not any(p.startswith("power_modes_") for p in made)
    assert "| variant | equivalent | parity |" in md
    with open(tmp_path / "summary.csv", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == report_format.SUMMARY_COLUMNS
        assert "power_mode" not in reader.fieldnames
        assert {r["variant"] for r in reader} == {"pytorch", "tensorrt-fp16"}
