"""python -m edgebench.compare: matching, the bootstrap, verdicts, parity loss, environment
diff, fleet devices, trends and exit codes, on small run directories written here through
edgebench.store.append (synthetic per-call timings with known shifts; nothing is measured)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgebench import compare, compare_report, store
from edgebench import compare_stats as cs
from edgebench.compare_runs import (
    Run,
    compare_pair,
    env_diff,
    flatten_env,
    read_meta,
    read_records,
)
from edgebench.metrics import latency_summary

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ helpers
def calls(median_ms: float, n: int = 200, seed: int = 0) -> list[float]:
    """Per-call times with a right tail, like real ones: median ``median_ms``."""
    rng = np.random.default_rng(seed)
    x = median_ms * np.exp(rng.normal(0, 0.05, n)) + rng.exponential(0.02 * median_ms, n)
    return [round(float(v), 4) for v in x * median_ms / np.median(x)]


def rec(model, variant, task, status="ok", device_id="", **kw) -> dict:
    r = {"run_id": "x", "model": model, "variant": variant, "task": task, "status": status,
         "reason": "" if status == "ok" else "it broke", "device": {"kind": "cpu", "name": "T"},
         "device_id": device_id, "weights": "random-seed-0", "equivalent": True,
         "memory_mb": {"baseline": 100.0, "peak": 300.0, "delta": 200.0}, "power_w": None,
         "power_reason": "no sensor", "energy_mj_per_sample": None,
         "started_at": "2026-11-24T00:00:00+00:00", "wall_s": 1.0}
    r.update(kw)
    return r


def lat(model, variant, ms: list[float] | None = None, raw=True, bs=1, **kw) -> dict:
    ms = ms if ms is not None else calls(10.0)
    r = rec(model, variant, "latency", batch_size=bs, n=len(ms), latency_ms=latency_summary(ms, 200), **kw)
    if raw:
        r[store.RAW_KEY] = {"latency_ms": ms}
    return r


def thr(model, variant, per_batch: dict[int, list[float]], raw=True, **kw) -> dict:
    bb = [{"batch_size": b, "samples_per_s": b * 1000 * len(x) / sum(x), "iters": len(x),
           "latency_ms_p50": float(np.median(x)), "rtr": None, "ase": None, "bsr": None}
          for b, x in per_batch.items()]
    top = max(bb, key=lambda e: e["samples_per_s"])
    r = rec(model, variant, "throughput", best_batch=top["batch_size"],
            samples_per_s=top["samples_per_s"], by_batch=bb, **kw)
    if raw:
        r[store.RAW_KEY] = {"by_batch_ms": {str(b): x for b, x in per_batch.items()}}
    return r


def parity(model, variant, status="ok", **kw) -> dict:
    return rec(model, variant, "parity", status, n_images=16, top1_agreement=1.0 if status == "ok" else 0.5,
               top5_agreement=1.0, max_abs_diff=1e-5 if status == "ok" else 0.3, mean_abs_diff=1e-6,
               cosine_min=1.0, **kw)


def make_run(root: Path, name: str, records: list[dict], created_at="2026-11-24T10:00:00+00:00",
             meta: dict | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    for r in records:
        store.append(d / "results.jsonl", dict(r))
    m = {"run_id": name, "created_at": created_at,
         "config": {"profile": "quick", "profile_settings": {"latency": {"min_count": 20}}},
         "machine": {"python": "3.11.7", "os_release": "Debian 12", "hostname": "vm"},
         "device": {"kind": "cpu", "name": "T"}, "device_state": {"kind": "linux"},
         "variants": {"pytorch": {"ok": True, "versions": {"torch": "2.14.1"}},
                      "onnxruntime": {"ok": True, "versions": {"onnxruntime": "1.31.1"}}},
         "options": {"ort_threads": None}, "env": {}}
    for k, v in (meta or {}).items():
        m[k] = {**m[k], **v} if isinstance(v, dict) and isinstance(m.get(k), dict) else v
    (d / "run.json").write_text(json.dumps(m), encoding="utf-8")
    return d


def pair_of(a: Path, b: Path, threshold=0.05):
    ra, rb = (Run(d, read_meta(d)[0], read_records(d)[0], label=lab) for d, lab in ((a, "A"), (b, "B")))
    return compare_pair(ra, rb, threshold, n_boot=500)


def run_main(capsys, *argv) -> tuple[int, str, str]:
    rc = compare.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_usage_error(rc, err, *words):
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgebench compare: error: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])


# ----------------------------------------------------------------------------- matching
def test_cells_matched_by_batch_size_and_cells_in_one_run_listed(tmp_path):
    a = make_run(tmp_path, "a", [lat("m1", "pytorch"), lat("m2", "pytorch"),
                                 thr("m1", "pytorch", {1: calls(10), 2: calls(18), 4: calls(34)})])
    b = make_run(tmp_path, "b", [lat("m1", "pytorch", calls(10, seed=1)),
                                 lat("m1", "onnxruntime"),
                                 thr("m1", "pytorch", {1: calls(10, seed=2), 2: calls(18, seed=3)})])
    p = pair_of(a, b)
    got = {(r["model"], r["variant"], r["task"], r["batch_size"]) for r in p.perf}
    assert got == {("m1", "pytorch", "latency", 1), ("m1", "pytorch", "throughput", 1),
                   ("m1", "pytorch", "throughput", 2)}
    only = {(r["model"], r["variant"], r["task"], r["batch_size"], r["in"]) for r in p.only}
    assert only == {("m2", "pytorch", "latency", None, "A"), ("m1", "onnxruntime", "latency", None, "B"),
                    ("m1", "pytorch", "throughput", 4, "A")}
    thr_b2 = next(r for r in p.perf if r["task"] == "throughput" and r["batch_size"] == 2)
    assert thr_b2["metric"] == "samples/s" and thr_b2["a"] == pytest.approx(2000 / 18, rel=1e-6)


def test_latency_cells_at_different_batch_sizes_do_not_match(tmp_path):
    a = make_run(tmp_path, "a", [lat("m", "pytorch", bs=1)])
    b = make_run(tmp_path, "b", [lat("m", "pytorch", bs=2)])
    p = pair_of(a, b)
    assert p.perf == []
    assert {(r["batch_size"], r["in"]) for r in p.only} == {(1, "A"), (2, "B")}


# ---------------------------------------------------------------------------- bootstrap
def test_bootstrap_finds_a_20_percent_shift_with_ci_excluding_one():
    a, b = calls(10.0, 300, seed=1), calls(12.0, 300, seed=2)
    r = cs.ratio_ci(a, b, seed=0, key="k")
    assert r.point == pytest.approx(1.2, rel=1e-6)
    assert 1.05 < r.low < 1.2 < r.high < 1.3          # excludes 1 and the 5% threshold
    assert cs.verdict(r, 0.05) == cs.SLOWER
    t = r.inverse()                                  # the same cell as throughput
    assert t.high < 1 / 1.05 and t.point == pytest.approx(1 / 1.2)
    assert cs.verdict(cs.ratio_ci(b, a, key="k"), 0.05) == cs.FASTER


def test_bootstrap_identical_distributions_no_significant_change_and_reproducible():
    a, b = calls(10.0, 300, seed=3), calls(10.0, 300, seed=4)
    r = cs.ratio_ci(a, b, seed=0, key="k")
    assert r.low < 1.0 < r.high and r.high - r.low < 0.05
    assert cs.verdict(r, 0.05) == cs.SAME
    assert cs.ratio_ci(a, b, seed=0, key="k") == r                 # seeded: same output
    assert cs.ratio_ci(a, b, seed=1, key="k") != r


def test_block_bootstrap_widens_the_ci_of_autocorrelated_calls():
    """A slow drift inside a run: single-call resampling would make the CI too narrow."""
    rng = np.random.default_rng(0)
    drift = 10 * (1 + 0.1 * np.sin(np.linspace(0, 3, 1000))) + rng.normal(0, 0.1, 1000)
    iid = rng.permutation(drift)
    w_drift = np.subtract(*cs.median_ci(drift, 1000)[2:0:-1])
    w_iid = np.subtract(*cs.median_ci(iid, 1000)[2:0:-1])
    assert cs.block_len(1000) == 10 and w_drift > 1.5 * w_iid


@pytest.mark.parametrize("ratio,expected", [
    (cs.Ratio(1.10, 1.051, 1.20), cs.SLOWER),
    (cs.Ratio(1.10, 1.049, 1.20), cs.SAME),        # CI touches the threshold: not called
    (cs.Ratio(1.03, 1.01, 1.04), cs.SAME),         # significant, but under the minimum effect
    (cs.Ratio(0.90, 0.85, 0.95), cs.FASTER),       # below 1/1.05 = 0.952
    (cs.Ratio(0.95, 0.94, 0.953), cs.SAME),
    (cs.Ratio(1.06), cs.SLOWER),                   # no CI: the point ratio
    (cs.Ratio(1.04), cs.SAME),
])
def test_verdict_at_the_threshold(ratio, expected):
    assert cs.verdict(ratio, 0.05) == expected


def test_threshold_option_changes_the_verdict(tmp_path, capsys):
    a = make_run(tmp_path, "a", [lat("m", "pytorch", calls(10.0, 300, 1))])
    b = make_run(tmp_path, "b", [lat("m", "pytorch", calls(10.8, 300, 2))])
    assert run_main(capsys, a, b, "--fail-on", "slower", "--out", tmp_path / "o1")[0] == 1
    assert run_main(capsys, a, b, "--fail-on", "slower", "--threshold", "10%", "--out", tmp_path / "o2")[0] == 0


def test_runs_without_raw_timings_use_the_point_ratio_and_say_no_ci(tmp_path, capsys):
    a = make_run(tmp_path, "a", [lat("m", "pytorch", calls(10.0), raw=False)])
    b = make_run(tmp_path, "b", [lat("m", "pytorch", calls(11.0), raw=False)])
    assert not (a / store.RAW_FILE).exists()
    p = pair_of(a, b)
    (r,) = p.perf
    assert not r["ratio"].has_ci and r["verdict"] == cs.SLOWER and "no CI" in r["note"]
    rc, _, _ = run_main(capsys, a, b, "--out", tmp_path / "o")
    assert rc == 0 and "no CI" in (tmp_path / "o" / "compare.md").read_text(encoding="utf-8")


def test_committed_reference_runs_compare_without_raw_timings(tmp_path, capsys):
    ref = REPO / "results" / "reference-runs" / "2026-11-23-h100"
    rc, _, err = run_main(capsys, ref / "1-before-fixes", ref / "2-gpu-fp32", "--out", tmp_path)
    assert rc == 0, err
    rows = [ln for ln in (tmp_path / "compare.csv").read_text(encoding="utf-8").splitlines() if ",performance," in ln]
    assert rows and all("no CI" in ln for ln in rows)


def test_changed_sidecar_line_is_not_trusted(tmp_path):
    a = make_run(tmp_path, "a", [lat("m", "pytorch", calls(10.0))])
    b = make_run(tmp_path, "b", [lat("m", "pytorch", calls(10.0, seed=5))])
    side = b / store.RAW_FILE
    side.write_text(side.read_text(encoding="utf-8").replace('"latency_ms":[', '"latency_ms":[99.0,'), encoding="utf-8")
    (r,) = pair_of(a, b).perf
    assert not r["ratio"].has_ci and "no raw timings in B" in r["note"]


# ------------------------------------------------------------------- parity, env, fleet
def test_lost_equivalence_flagged_first(tmp_path, capsys):
    a = make_run(tmp_path, "a", [parity("m", "onnxruntime"), lat("m", "onnxruntime"),
                                 parity("m", "pytorch"), lat("m", "pytorch")])
    b = make_run(tmp_path, "b", [parity("m", "onnxruntime", "failed", criterion="max_abs_diff 0.3"),
                                 lat("m", "onnxruntime", equivalent=False),
                                 parity("m", "pytorch"), lat("m", "pytorch")])
    p = pair_of(a, b)
    assert [(r["model"], r["variant"]) for r in p.lost] == [("m", "onnxruntime")]
    assert "parity ok -> failed" in p.lost[0]["what"] and "equivalent true -> false" in p.lost[0]["what"]
    diffs = {(r["variant"], r["metric"]): (r["a"], r["b"]) for r in p.quality}
    assert diffs[("onnxruntime", "max_abs_diff")] == (1e-5, 0.3)      # the failure's figures
    assert diffs[("pytorch", "top1_agreement")] == (1.0, 1.0)
    rc, out, _ = run_main(capsys, a, b, "--out", tmp_path / "o", "--fail-on", "parity")
    assert rc == 1
    assert out.index("LOST EQUIVALENCE") < out.index("Performance")
    md = (tmp_path / "o" / "compare.md").read_text(encoding="utf-8")
    assert md.index("LOST EQUIVALENCE") < md.index("### Performance")
    assert "lost_equivalence" in (tmp_path / "o" / "compare.csv").read_text(encoding="utf-8")


def test_accuracy_memory_and_energy_changes(tmp_path):
    def acc(top1):
        return rec("m", "pytorch", "accuracy", n_images=16, top1=top1, top5=90.0,
                   samples_per_s=50.0, skipped_images=0)

    a = make_run(tmp_path, "a", [acc(70.0), lat("m", "pytorch", energy_mj_per_sample=10.0)])
    b = make_run(tmp_path, "b", [acc(65.5), lat("m", "pytorch", energy_mj_per_sample=12.0,
                                               memory_mb={"baseline": 100.0, "peak": 303.0, "delta": 260.0})])
    p = pair_of(a, b)
    q = {r["metric"]: r for r in p.quality}
    assert q["top1"]["change"] == pytest.approx(-4.5) and q["top5"]["change"] == 0
    res = {(r["task"], r["metric"]): r for r in p.resources}
    assert res[("latency", "memory peak MiB")]["note"] == ""          # +3 MiB: not a change
    assert res[("latency", "memory delta MiB")]["note"] == "changed"  # +30%
    assert res[("latency", "energy mJ/sample")]["ratio"] == pytest.approx(1.2)
    assert res[("latency", "energy mJ/sample")]["note"] == "changed"
    assert ("accuracy", "energy mJ/sample") not in res                # null in both: not shown


def test_environment_diff_names_what_changed(tmp_path):
    a = make_run(tmp_path, "a", [lat("m", "onnxruntime", calls(10.0))], meta={
        "device_state": {"kind": "jetson", "jetpack": "6.1", "nvpmodel": {"mode": "MAXN"},
                         "cpu_policies": [{"policy": "policy0", "cur_khz": 1000}]}})
    b = make_run(tmp_path, "b", [lat("m", "onnxruntime", calls(13.0, seed=1))], meta={
        "device_state": {"kind": "jetson", "jetpack": "6.2", "nvpmodel": {"mode": "15W"},
                         "cpu_policies": [{"policy": "policy0", "cur_khz": 2000}]},
        "variants": {"onnxruntime": {"ok": True, "versions": {"onnxruntime": "1.32.0"}}},
        "config": {"profile": "paper"}, "options": {"ort_threads": 1},
        "machine": {"python": "3.12.3"}, "device": {"name": "Orin"}})
    diff = {k: (x, y) for k, x, y in pair_of(a, b).env}
    assert diff["variants.onnxruntime.versions.onnxruntime"] == ("1.31.1", "1.32.0")
    assert diff["device_state.jetpack"] == ("6.1", "6.2")
    assert diff["device_state.nvpmodel.mode"] == ("MAXN", "15W")
    assert diff["config.profile"] == ("quick", "paper")
    assert diff["options.ort_threads"] == ("", "1")
    assert diff["machine.python"] == ("3.11.7", "3.12.3") and diff["device.name"] == ("T", "Orin")
    assert not any("cur_khz" in k for k in diff)          # sampled clocks are not a difference
    causes = compare_report.likely_causes(pair_of(a, b))
    assert causes[0].startswith("variants.onnxruntime.versions.onnxruntime")
    assert env_diff(flatten_env(read_meta(a)[0]), flatten_env(read_meta(a)[0])) == []


def _fleet(tmp_path) -> Path:
    recs = [lat("m", "pytorch", calls(10.0, seed=1), device_id="orin"),
            thr("m", "pytorch", {1: calls(10.0, seed=2)}, device_id="orin"),
            lat("m", "pytorch", calls(13.0, seed=3), device_id="nano"),
            thr("m", "pytorch", {1: calls(13.0, seed=4)}, device_id="nano")]
    def dev(name):
        return {"device": {"kind": "jetson", "name": name}, "variants": {}}
    return make_run(tmp_path, "fleet", recs, meta={
        "kind": "fleet", "devices": {"orin": dev("AGX Orin"), "nano": dev("Orin Nano")},
        "settings": {"orin": {"profile": "quick"}, "nano": {"profile": "quick"}}})


def test_fleet_run_devices_compared_as_runs(tmp_path, capsys):
    d = _fleet(tmp_path)
    rc, out, err = run_main(capsys, d, "--out", tmp_path / "o1", "--fail-on", "slower")
    assert rc == 1, err                                    # nano (B) is 30% slower than orin (A)
    csv_text = (tmp_path / "o1" / "compare.csv").read_text(encoding="utf-8")
    assert csv_text.count(",slower,") == 2 and "device.name,AGX Orin,Orin Nano" in csv_text
    assert "[device nano]" in out
    rc, out, err = run_main(capsys, d, "--devices", "nano", "orin", "--out", tmp_path / "o2",
                            "--fail-on", "slower")
    assert rc == 0 and (tmp_path / "o2" / "compare.csv").read_text(encoding="utf-8").count(",faster,") == 2
    rc, _, err = run_main(capsys, d, "--devices", "orin", "tx2", "--out", tmp_path / "o3")
    assert_usage_error(rc, err, "tx2")


# ------------------------------------------------------------------------ trend, gates
def test_three_runs_ordered_by_created_at_with_trend_plots(tmp_path, capsys):
    a = make_run(tmp_path, "r1", [lat("m", "pytorch", calls(10.0, seed=1)),
                                  thr("m", "pytorch", {1: calls(10, seed=5), 2: calls(18, seed=6)})],
                 created_at="2026-11-20T00:00:00+00:00")
    b = make_run(tmp_path, "r2", [lat("m", "pytorch", calls(13.0, seed=2)),   # batch 1 slower
                                  thr("m", "pytorch", {1: calls(13, seed=7), 2: calls(18, seed=8)})],
                 created_at="2026-11-21T00:00:00+00:00")
    c = make_run(tmp_path, "r3", [lat("m", "pytorch", calls(10.0, seed=3)),
                                  thr("m", "pytorch", {1: calls(10, seed=9), 2: calls(18, seed=10)})],
                 created_at="2026-11-22T00:00:00+00:00")
    out_dir = tmp_path / "o"
    rc, out, err = run_main(capsys, c, a, b, "--out", out_dir, "--fail-on", "slower")
    # r1 -> r2 is slower, but the gate judges the newest run (r3): faster than r2, same as r1
    assert rc == 0, out + err
    pngs = sorted((out_dir / "plots").glob("*.png"))
    assert [p.name for p in pngs] == ["trend-m-pytorch.png"] and pngs[0].stat().st_size > 5000
    md = (out_dir / "compare.md").read_text(encoding="utf-8")
    assert "![trend-m-pytorch](plots/trend-m-pytorch.png)" in md
    assert md.index("| A | " + str(a)) < md.index("| B | " + str(b)) < md.index("| C | " + str(c))
    assert "## A -> B" in md and "## B -> C" in md and "## A -> C" in md
    assert "created_at" in out
    csv_rows = (out_dir / "compare.csv").read_text(encoding="utf-8").splitlines()
    slow = [r for r in csv_rows if ",slower," in r]
    assert len(slow) == 2 and slow[0].startswith(f"{a},{b},performance,,m,pytorch,latency,1,")
    assert slow[1].startswith(f"{a},{b},performance,,m,pytorch,throughput,1,")


def test_exit_codes_0_and_1(tmp_path, capsys):
    a = make_run(tmp_path, "a", [lat("m", "pytorch", calls(10.0, seed=1))])
    same = make_run(tmp_path, "same", [lat("m", "pytorch", calls(10.0, seed=2))])
    slow = make_run(tmp_path, "slow", [lat("m", "pytorch", calls(12.0, seed=3))])
    assert run_main(capsys, a, same, "--fail-on", "slower", "--out", tmp_path / "o1")[0] == 0
    rc, out, _ = run_main(capsys, a, slow, "--fail-on", "slower", "--out", tmp_path / "o2")
    assert rc == 1 and "FAILED" in out
    assert run_main(capsys, a, slow, "--out", tmp_path / "o3")[0] == 0          # no gate asked
    assert run_main(capsys, a, slow, "--fail-on", "parity", "--out", tmp_path / "o4")[0] == 0


def test_exit_2_for_each_bad_input(tmp_path, capsys):
    good = make_run(tmp_path, "good", [lat("m", "pytorch")])
    other = make_run(tmp_path, "other", [lat("x", "pytorch")])
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    broken = make_run(tmp_path, "broken", [lat("m", "pytorch"), lat("m", "jax")])
    lines = (broken / "results.jsonl").read_text(encoding="utf-8").splitlines()
    (broken / "results.jsonl").write_text(lines[0][:40] + "\n" + lines[1] + "\n", encoding="utf-8")
    notrec = make_run(tmp_path, "notrec", [lat("m", "pytorch")])
    (notrec / "results.jsonl").write_text('{"model": "m", "task": "latency"}\n', encoding="utf-8")
    nop50 = make_run(tmp_path, "nop50", [rec("m", "pytorch", "latency", batch_size=1, latency_ms={})])
    badjson = make_run(tmp_path, "badjson", [lat("m", "pytorch")])
    (badjson / "run.json").write_text("{not json", encoding="utf-8")
    badraw = make_run(tmp_path, "badraw", [lat("m", "pytorch", [-1.0, 2.0, 3.0, 4.0])])
    o = ["--out", str(tmp_path / "o")]
    cases = [((good, tmp_path / "missing"), "missing"), ((good, empty_dir), "no results.jsonl"),
             ((good, broken), "line 1"), ((good, notrec), "not a result record"),
             ((good, nop50), "latency_ms.p50"), ((good, badjson), "run.json"),
             ((good, badraw), "raw timings"), ((good, other), "share no cell"), ((good,), "not a fleet run"),
             ((good, good, "--threshold", "five"), "--threshold")]
    for args, words in cases:
        rc, _, err = run_main(capsys, *args, *o)
        assert_usage_error(rc, err, words)


def test_torn_last_line_is_ignored(tmp_path, capsys):
    a = make_run(tmp_path, "a", [lat("m", "pytorch")])
    b = make_run(tmp_path, "b", [lat("m", "pytorch")])
    with open(b / "results.jsonl", "a", encoding="utf-8") as f:
        f.write('{"model": "m", "vari')
    rc, out, err = run_main(capsys, a, b, "--out", tmp_path / "o")
    assert rc == 0, err
    assert "incomplete last line" in out


def test_module_entry_point_help_and_usage_error():
    r = subprocess.run([sys.executable, "-m", "edgebench.compare", "--help"], capture_output=True,
                       text=True, check=False, cwd=REPO, timeout=60)
    assert r.returncode == 0 and "exit codes" in r.stdout and "--fail-on" in r.stdout
    r = subprocess.run([sys.executable, "-m", "edgebench.compare", "/nonexistent/run-x", "/nonexistent/run-y"],
                       capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert r.returncode == 2 and r.stderr.startswith("edgebench compare: error: /nonexistent/run-x")
    assert "Traceback" not in r.stderr


# --------------------------------------------------------------------- process noise
def test_process_sd_from_pairs_and_the_widened_interval():
    e = np.exp
    assert cs.process_sd([]) is None
    sd = cs.process_sd([(10.0, 10.0 * e(0.1)), (10.0, 10.0 * e(-0.1))])
    assert sd == pytest.approx(0.1 / np.sqrt(2))
    r = cs.widen(cs.Ratio(1.0, 0.99, 1.01), sd)
    half = np.sqrt(np.log(1.01) ** 2 + (1.959964 * np.sqrt(2) * sd) ** 2)
    assert r.low == pytest.approx(np.exp(-np.sqrt(np.log(0.99) ** 2 + (1.959964 * 0.1) ** 2)))
    assert r.high == pytest.approx(np.exp(half), rel=1e-6) and r.point == 1.0
    assert cs.widen(cs.Ratio(1.2), sd).low is None            # no interval: nothing to widen
    assert cs.widen(cs.Ratio(1.0, 0.99, 1.01), None).low == 0.99


def test_a_process_level_shift_is_not_a_change_but_a_real_one_is(tmp_path):
    """Run B's mobilenet process happens to be 25% slower in its latency cell only (its
    throughput cell's batch 1 is not): the runs' own pairs show that processes differ that much,
    so the latency cell is not called slower. A change that moves every process of a variant
    (both halves of each pair) is still found."""
    def run(name, m_lat, m_b1, s_lat, s_b1):
        return make_run(tmp_path, name, [
            lat("m", "pytorch", calls(m_lat, seed=1)), thr("m", "pytorch", {1: calls(m_b1, seed=2)}),
            lat("s", "pytorch", calls(s_lat, seed=3)), thr("s", "pytorch", {1: calls(s_b1, seed=4)})])
    a = run("a", 10.0, 10.0, 20.0, 21.0)
    shifted = run("b", 12.5, 10.1, 20.2, 19.4)          # one process 25% off its pair
    p = pair_of(a, shifted)
    (sd, n), = p.noise.values()
    assert n == 4 and 0.06 < sd < 0.2
    verdicts = {(r["model"], r["task"], r["batch_size"]): r["verdict"] for r in p.perf}
    assert verdicts[("m", "latency", 1)] == cs.SAME
    slower = run("c", 13.0, 13.0, 26.0, 27.3)            # every process 30% slower
    p = pair_of(a, slower)
    assert all(r["verdict"] == cs.SLOWER for r in p.perf)


def test_without_pairs_the_noise_is_said_to_be_unknown(tmp_path):
    a = make_run(tmp_path, "a", [lat("m", "pytorch", calls(10.0, seed=1))])
    b = make_run(tmp_path, "b", [lat("m", "pytorch", calls(10.0, seed=2))])
    p = pair_of(a, b)
    assert p.noise == {} and "process noise unknown" in p.perf[0]["note"]


# ------------------------------------------------------------- recorded real runs
RECORDED = Path(__file__).parent / "fixtures" / "compare-runs"


def test_recorded_a_a_pair_is_mostly_no_change_and_the_a_b_pair_finds_the_change(tmp_path):
    """Real runs of this VM (tests/fixtures/compare-runs/README.md): the bootstrap on their
    raw timings, the process noise from their pairs, and the verdicts. A/A: at most one cell
    in ten called changed. A/B (ONNX Runtime on one thread): every ORT cell slower with a CI
    that excludes 1, and the gate exits 1."""
    aa = pair_of(RECORDED / "a1", RECORDED / "a2")
    assert len(aa.perf) >= 20
    changed = [r for r in aa.perf if r["verdict"] != cs.SAME]
    assert len(changed) * 10 <= len(aa.perf), [(r["model"], r["variant"], r["task"],
                                                r["batch_size"]) for r in changed]
    assert {v for _, v, _ in aa.noise} == {"pytorch", "onnxruntime"}
    assert all(n == 4 and 0 < sd < 0.2 for sd, n in aa.noise.values())
    for r in aa.perf:                                   # every interval holds its point
        assert r["ratio"].low <= r["ratio"].point <= r["ratio"].high

    ab = pair_of(RECORDED / "a1", RECORDED / "b")
    ort = [r for r in ab.perf if r["variant"] == "onnxruntime"]
    assert ort and all(r["verdict"] == cs.SLOWER and r["time_ratio"].low > 1.0 for r in ort)
    rc = compare.main([str(RECORDED / "a1"), str(RECORDED / "b"), "--fail-on", "slower",
                       "--out", str(tmp_path / "ab")])
    assert rc == 1
    assert "intra_op_num_threads" in (tmp_path / "ab" / "compare.md").read_text(encoding="utf-8")
