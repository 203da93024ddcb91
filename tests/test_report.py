"""Report maths and rendering on hand-made records (every figure must come from a record)."""
from __future__ import annotations

import csv

from edgebench import report, report_format


def rec(variant, task, **kw):
    base = {"run_id": "x", "model": "m", "variant": variant, "task": task, "status": "ok",
            "reason": "", "device": {"kind": "cpu", "name": "cpu"}, "device_id": "",
            "weights": "random-seed-0", "memory_mb": {"baseline": 10.0, "peak": 50.0, "delta": 40.0},
            "power_w": None, "power_reason": "no sensor", "energy_mj_per_sample": None}
    base.update(kw)
    return base


def lat(p50):
    return {"mean": p50, "p50": p50, "p90": p50, "p95": p50, "p99": p50 * 2, "min": p50,
            "max": p50 * 3, "ci95_low": p50, "ci95_high": p50}


RECORDS = [
    rec("pytorch", "latency", latency_ms=lat(20.0), n=30, cold_start_ms=50.0, convert_s=0.1),
    rec("onnxruntime", "parity", status="failed", reason="parity failed", top1_agreement=0.5,
        top5_agreement=0.5, max_abs_diff=0.3, mean_abs_diff=0.1, cosine_min=0.9,
        ref_distinct_classes=2, criterion="fp32: max_abs_diff 0.3 (<= 0.001)",
        ref_logit_absmax=0.05, max_rel_diff=6.0),
    rec("onnxruntime", "latency", latency_ms=lat(5.0), n=100, cold_start_ms=9.0, equivalent=False),
    rec("onnxruntime", "latency", latency_ms=lat(4.0), n=100, cold_start_ms=9.0, equivalent=False),
]


def test_speedup_uses_latest_record_and_same_run_baseline():
    rows = {r["variant"]: r for r in report_format.summary_rows(RECORDS)}
    assert rows["onnxruntime"]["latency_p50_ms"] == 4.0          # the later record wins
    assert rows["onnxruntime"]["speedup_p50_vs_pytorch"] == 5.0
    assert rows["onnxruntime"]["equivalent"] is False
    assert rows["pytorch"]["peak_rss_mb"] == 50.0


def test_markdown_warns_and_keeps_tables_intact(tmp_path):
    meta = {"run_id": "x", "models": {"m": {"weights": "random-seed-0", "weights_note": "n"}},
            "data": {"source": "sample", "n_images": 16}, "variants": {}}
    report.write_all(tmp_path, RECORDS, meta)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "failed parity" in md and "non-equivalent" in md
    assert "only 2 distinct classes" in md and "Random weights" in md
    assert "reference logits are small (max |logit| 0.05)" in md and "6.00e+00" in md
    assert "max abs diff 0.3 (rel 6.00)" in md
    table = [ln for ln in md.splitlines() if ln.startswith("| onnxruntime")][0]
    header = [ln for ln in md.splitlines() if ln.startswith("| variant")][0]
    assert table.count("|") == header.count("|")                 # no stray pipes in cells
    with open(tmp_path / "summary.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["variant"] for r in rows} == {"pytorch", "onnxruntime"}
    assert (tmp_path / "plots" / "latency.png").is_file()


def test_study_figures_beside_ours_only_on_an_agx_orin(tmp_path):
    recs = [rec("tensorrt-fp16", "latency", model="resnet152", latency_ms=lat(2.5), n=100,
                power_w={"mean": 27.5, "idle": 8.0}),
            rec("tensorrt-fp16", "throughput", model="resnet152", best_batch=64,
                samples_per_s=812.0, by_batch=[])]
    meta = {"run_id": "x", "models": {}, "data": {"source": "sample", "n_images": 16},
            "variants": {}, "device_state": {"board_model": "NVIDIA Jetson AGX Orin Developer Kit"}}
    report.write_all(tmp_path, recs, meta)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Beside the study" in md
    section = md.split("## Beside the study", 1)[1]
    lat_row = next(ln for ln in section.splitlines() if "| latency_per_sample |" in ln)
    assert "2.28 ms" in lat_row and "| 2.50 |" in lat_row        # the study's figure, then ours
    power_row = next(ln for ln in section.splitlines() if "| power |" in ln)
    assert "28.3" in power_row and "| 27.50 |" in power_row
    # Any other board: no study column (its figures are the AGX Orin's alone).
    meta["device_state"] = {"board_model": "NVIDIA Jetson Orin Nano Developer Kit"}
    report.write_all(tmp_path, recs, meta)
    assert "Beside the study" not in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_smoke_profile_says_its_figures_are_not_for_comparison(tmp_path):
    recs = [rec("tensorrt-fp16", "latency", model="resnet152", latency_ms=lat(2.5), n=5,
                power_w={"mean": 27.5, "idle": 8.0})]
    meta = {"run_id": "x", "models": {}, "data": {"source": "sample", "n_images": 16},
            "variants": {}, "device_state": {"board_model": "NVIDIA Jetson AGX Orin Developer Kit"}}
    for profile, said in (("quick", False), ("paper", False), ("smoke", True)):
        meta["config"] = {"profile": profile}
        report.write_all(tmp_path, recs, meta)
        md = (tmp_path / "report.md").read_text(encoding="utf-8")
        assert f"- Profile: {profile};" in md
        assert ("not for comparison" in md) is said, profile
        assert ("## Beside the study" in md) is not said, profile    # no study column then


def test_report_cli_renders_a_stopped_run(tmp_path):
    """A run stopped before its report step (here: the committed H100 run, whose cells were
    cut by a time limit) gets report.md, summary.csv and plots from its records alone."""
    import shutil

    from testlib import REPO, run_cli

    src = REPO / "results" / "reference-runs" / "2026-11-23-h100" / "2-gpu-fp32"
    run = tmp_path / "run"
    shutil.copytree(src, run, ignore=shutil.ignore_patterns("report.md", "summary.csv", "plots"))
    proc = run_cli("edgebench.report", str(run), str(tmp_path / "nope"))
    assert proc.returncode == 2 and "not an edgebench run directory" in proc.stderr
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "GPU: NVIDIA H100 80GB HBM3" in report and "| pytorch-compile | yes |" in report
    assert (run / "summary.csv").read_text(encoding="utf-8").count("resnet152") == 2
    assert (run / "plots" / "latency.png").is_file()


def test_memory_and_energy_each_under_their_own_name_and_study_memory_like_with_like(tmp_path):
    """Process RSS, system used memory and NvMap are separate columns; the study's "system
    memory" (GB) is compared with our system-wide mean over the timed windows, not the RSS."""
    system = {"baseline": 9000.0, "peak": 10700.0, "mean": 10547.2, "delta": 1700.0,
              "total": 62841.0, "over": "timed windows", "source": "meminfo"}
    mem = {"baseline": 300.0, "peak": 800.0, "delta": 500.0, "system": system,
           "device": {"baseline": 100.0, "peak": 1500.0, "delta": 1400.0, "source": "NvMap"}}
    power = {"mean": 12.5, "idle": 8.0, "net": 4.5, "rails": {}, "window_s": 2.0,
             "source": "tegrastats", "caveat": "tegrastats: sum of rails"}
    recs = [rec("tvm", "latency", model="mobilenetv2_100", latency_ms=lat(3.0), n=100,
                memory_mb=mem, power_w=power, power_reason=None, energy_mj_per_sample=13.5),
            rec("tvm", "throughput", model="mobilenetv2_100", best_batch=8, samples_per_s=900.0,
                by_batch=[{"batch_size": 8, "samples_per_s": 900.0, "energy_mj_per_sample": 7.0,
                           "power_mean_w": 14.3, "system_memory_mean_mb": 10547.2}],
                memory_mb=mem, power_w=dict(power, mean=14.3, net=6.3), power_reason=None,
                energy_mj_per_sample=7.0)]
    meta = {"run_id": "x", "models": {}, "data": {"source": "sample", "n_images": 16},
            "variants": {}, "device_state": {"board_model": "NVIDIA Jetson AGX Orin Developer Kit"}}
    report.write_all(tmp_path, recs, meta)
    with open(tmp_path / "summary.csv", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert float(row["peak_rss_mb"]) == 800.0 and float(row["system_memory_mean_mb"]) == 10547.2
    assert float(row["system_memory_peak_mb"]) == 10700.0
    assert float(row["system_memory_baseline_mb"]) == 9000.0
    assert float(row["device_memory_peak_mb"]) == 1500.0
    assert float(row["energy_mj_per_sample"]) == 13.5
    assert float(row["throughput_energy_mj_per_sample"]) == 7.0
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    section = md.split("## Beside the study", 1)[1]
    mem_row = next(ln for ln in section.splitlines() if "| system_memory |" in ln)
    assert "10.3 GB" in mem_row and "| 10.30 |" in mem_row       # 10547.2 MiB / 1024, not RSS
    assert "## Power and energy" in md and "| 14.30 @ 8 | 7.000 |" in md
    assert (tmp_path / "plots" / "energy.png").is_file()


def test_a_throughput_kept_to_tuned_sizes_says_so_under_its_table(tmp_path):
    # a TVM build's record: its tuning block lists the sizes its database was tuned at
    tuning = {"status": "tuned", "batch_sizes": [1]}
    records = [
        rec("pytorch", "throughput", best_batch=16, samples_per_s=90.0, by_batch=[],
            stop_reason="batch cap 16 of this profile reached"),
        rec("tvm", "throughput", best_batch=1, samples_per_s=300.0,
            by_batch=[{"batch_size": 1, "samples_per_s": 300.0}], variant_meta={"tuning": tuning},
            stop_reason="largest batch size the variant is tuned for (1) reached: it would "
                        "run a larger one with untuned kernels"),
        rec("tvm", "latency", latency_ms=lat(3.0), n=100, variant_meta={"tuning": tuning})]
    meta = {"run_id": "x", "models": {"m": {"weights": "random-seed-0"}},
            "data": {"source": "sample", "n_images": 16}, "variants": {}}
    report.write_all(tmp_path, records, meta)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    notes = [ln for ln in md.splitlines() if "throughput searched only" in ln]
    assert notes == ["- tvm: throughput searched only the batch sizes its tuning database holds "
                     "tuned kernels for (1); another would run untuned. `python -m edgebench.tune "
                     "--model m --batch-size 2` tunes another size into the same database."]
    # an artifact exported at an untuned size alone runs it: that it ran untuned is said instead
    records[1] = dict(records[1], by_batch=[{"batch_size": 2, "samples_per_s": 20.0}],
                      best_batch=2, samples_per_s=20.0,
                      stop_reason="largest batch size the variant was built for (2) reached")
    report.write_all(tmp_path, records, meta)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "throughput searched only" not in md
    assert ("- tvm: throughput's batch sizes 2 ran with untuned kernels (its tuning database "
            "holds tuned kernels for 1).") in md.splitlines()
