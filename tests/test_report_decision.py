"""report.md opens with the variant to ship, per model: the fastest whose parity passed, with
the runner-up and why the others are not in the race; one Pareto plot per run. Hand-made
records (every figure must come from a record), rendered by the real report."""
from __future__ import annotations

from edgebench import report, report_decision, report_format
from test_report import lat, rec

UNTUNED = {"tuning": {"status": "untuned", "database": "/x",
                      "note": "no tuning database for this model and target"}}
EQ = {"equivalent": True, "equivalence": "fp32"}


def _records():
    return [
        rec("pytorch", "latency", latency_ms=lat(20.0), equivalent=True, equivalence="the reference"),
        # fastest of all, but its parity failed: never the choice
        rec("onnxruntime-int8", "parity", status="failed", reason="parity failed", top1_agreement=0.5,
            top5_agreement=0.5, max_abs_diff=0.3, mean_abs_diff=0.1, cosine_min=0.2,
            ref_distinct_classes=9, criterion="int8: cosine_mean 0.2 (>= 0.95)"),
        rec("onnxruntime-int8", "latency", latency_ms=lat(2.0), equivalent=False),
        rec("onnxruntime", "latency", latency_ms=lat(5.0), **EQ),
        rec("tvm", "latency", latency_ms=lat(8.0), variant_meta=UNTUNED, **EQ),
        rec("jax", "latency", status="skipped", reason="no Flax implementation of 'm'",
            equivalent=None),
    ]


def test_the_fastest_variant_that_passed_parity_is_chosen_with_its_runner_up(tmp_path):
    records = _records()
    rows = report_format.summary_rows(records)
    lines = report_decision.decision_lines(rows, records)
    text = "\n".join(lines)
    assert lines[0] == "## Which runtime to ship"
    best = next(ln for ln in lines if ln.startswith("- **m:"))
    assert best.startswith("- **m: onnxruntime**: p50 5.000 ms, 4.00x PyTorch's speed, p99 10.000 ms")
    assert "Runner-up: tvm (untuned), p50 8.000 ms (1.60x the first's)" in best
    assert "failed parity (its figures come from a different model): onnxruntime-int8" in text
    assert "did not run or measure: jax (no Flax implementation of 'm')" in text
    # the whole report: the section first, the untuned label in the table too, the plot made
    meta = {"run_id": "x", "models": {"m": {"weights": "random-seed-0", "weights_note": "n"}},
            "data": {"source": "sample", "n_images": 16}, "variants": {}}
    made = report.write_all(tmp_path, records, meta)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert md.index("## Which runtime to ship") < md.index("## Results")
    assert "| tvm (untuned) |" in md
    assert "pareto.png" in made and (tmp_path / "plots" / "pareto.png").stat().st_size > 1000


def test_an_artifact_exported_untuned_is_labelled_untuned_and_a_tuned_one_is_not():
    art = {"tuning": {"status": "untuned", "trials": 0}, "artifact_dir": "orin-tvm/m"}
    tuned = {"tuning": {"status": "tuned", "trials": 512}, "artifact_dir": "orin-tvm/n"}
    records = [rec("tvm", "latency", latency_ms=lat(8.0), variant_meta=art, **EQ),
               {**rec("tvm", "latency", latency_ms=lat(8.0), variant_meta=tuned, **EQ),
                "model": "n"}]
    assert report_decision.untuned(records) == {("m", "tvm")}


def test_no_variant_that_passed_parity_says_so_and_no_plot(tmp_path):
    records = [rec("onnxruntime", "latency", latency_ms=lat(5.0), equivalent=False)]
    rows = report_format.summary_rows(records)
    assert "- **m**: no variant both passed parity and measured a latency." in \
        report_decision.decision_lines(rows, records)
    assert not report_decision.pareto_plot(tmp_path / "p.png", rows, records)
    assert not (tmp_path / "p.png").exists()


def test_a_smoke_run_says_its_choice_is_only_a_first_look():
    records = _records()
    lines = report_decision.decision_lines(report_format.summary_rows(records), records,
                                           comparable=False)
    assert any("only a first look" in ln for ln in lines)
