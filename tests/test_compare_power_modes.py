"""python -m edgebench.compare on --power-modes runs: a cell is compared only with the same cell
in the same nvpmodel power mode, a mode one run lacks is "only in" the other, the process noise
of a ratio comes from its own mode, and runs without modes look as they always did."""
from __future__ import annotations

import csv

import pytest
from test_compare import calls, lat, make_run, pair_of, run_main, thr

from edgebench import compare_report
from edgebench import compare_stats as cs
from edgebench.compare_runs import Run, read_meta, read_records


def cells(mode: str, lat_ms: float, b1_ms: float, seed: int) -> list[dict]:
    """A latency cell and a throughput cell (batch 1) of m/pytorch in power mode ``mode``."""
    kw = {"power_mode": mode, "power_mode_state": {"mode": mode, "jetson_clocks": False}}
    return [lat("m", "pytorch", calls(lat_ms, 300, seed), **kw),
            thr("m", "pytorch", {1: calls(b1_ms, 300, seed + 1)}, **kw)]


def read_csv(path) -> tuple[list[str], list[dict]]:
    with open(path, encoding="utf-8", newline="") as f:
        r = csv.DictReader(f)
        return list(r.fieldnames or []), list(r)


def test_cells_pair_by_power_mode_and_the_15w_regression_trips_the_gate(tmp_path, capsys):
    # MAXN: latency and throughput processes agree; MODE_15W: they sit 20% apart (its own noise)
    a = make_run(tmp_path, "a", cells("MAXN", 10.0, 10.0, 1) + cells("MODE_15W", 20.0, 24.0, 3))
    b = make_run(tmp_path, "b", cells("MAXN", 10.0, 10.0, 5) + cells("MODE_15W", 40.0, 48.0, 7))
    p = pair_of(a, b)
    assert p.only == []
    rows = {(r["power_mode"], r["task"], r["batch_size"]): r for r in p.perf}
    assert set(rows) == {(m, t, 1) for m in ("MAXN", "MODE_15W") for t in ("latency", "throughput")}
    maxn, w15 = rows[("MAXN", "latency", 1)], rows[("MODE_15W", "latency", 1)]
    assert maxn["ratio"].point == pytest.approx(1.0, abs=0.01) and maxn["verdict"] == cs.SAME
    assert (maxn["a"], maxn["b"]) == (pytest.approx(10.0, rel=1e-3), pytest.approx(10.0, rel=1e-3))
    assert w15["ratio"].point == pytest.approx(2.0, rel=0.01) and w15["verdict"] == cs.SLOWER
    assert (w15["a"], w15["b"]) == (pytest.approx(20.0, rel=1e-3), pytest.approx(40.0, rel=1e-3))
    tp = rows[("MODE_15W", "throughput", 1)]
    assert tp["ratio"].point == pytest.approx(0.5, rel=0.01) and tp["verdict"] == cs.SLOWER
    assert rows[("MAXN", "throughput", 1)]["verdict"] == cs.SAME
    # the noise of a ratio is its own mode's: MAXN's processes agree, MODE_15W's do not
    assert set(p.noise) == {("", "pytorch", "MAXN"), ("", "pytorch", "MODE_15W")}
    (sd_maxn, n_maxn), (sd_15w, n_15w) = (p.noise[("", "pytorch", m)] for m in ("MAXN", "MODE_15W"))
    assert n_maxn == n_15w == 2 and sd_maxn < 0.02 and sd_15w > 0.1
    assert maxn["ratio"].high - maxn["ratio"].low < 0.1 < w15["ratio"].high / w15["ratio"].low - 1

    out_dir = tmp_path / "o"
    rc, out, err = run_main(capsys, a, b, "--fail-on", "slower", "--out", out_dir)
    assert rc == 1, out + err
    gate = next(ln for ln in out.splitlines() if ln.startswith("Gate"))
    assert "FAILED" in gate and "m pytorch latency [MODE_15W] b=1" in gate and "MAXN" not in gate
    heads, csv_rows = read_csv(out_dir / "compare.csv")
    assert heads[heads.index("task") + 1] == "power_mode"
    perf = {(r["power_mode"], r["task"]): r for r in csv_rows if r["section"] == "performance"}
    assert perf[("MODE_15W", "latency")]["verdict"] == "slower"
    assert float(perf[("MODE_15W", "latency")]["ratio"]) == pytest.approx(2.0, rel=0.01)
    assert perf[("MAXN", "latency")]["verdict"] == "no significant change"
    assert float(perf[("MAXN", "latency")]["ratio"]) == pytest.approx(1.0, abs=0.01)
    noise = {r["power_mode"] for r in csv_rows if r["section"] == "process_noise"}
    assert noise == {"MAXN", "MODE_15W"}
    md = (out_dir / "compare.md").read_text(encoding="utf-8")
    assert "| cell | power mode | metric | A | B | B/A | 95% CI | verdict | note |" in md
    assert "| m · pytorch · latency b=1 | MODE_15W | p50 latency ms |" in md
    assert "MODE_15W" in out and "MAXN" in out


def test_a_mode_only_in_b_is_listed_as_only_in_b(tmp_path, capsys):
    a = make_run(tmp_path, "a", cells("MAXN", 10.0, 10.0, 1))
    b = make_run(tmp_path, "b", cells("MAXN", 10.0, 10.0, 5) + cells("MODE_15W", 20.0, 20.0, 7))
    p = pair_of(a, b)
    assert {(r["power_mode"], r["task"]) for r in p.perf} == {("MAXN", "latency"), ("MAXN", "throughput")}
    assert sorted((r["power_mode"], r["task"], r["batch_size"], r["in"]) for r in p.only) == [
        ("MODE_15W", "latency", None, "B"), ("MODE_15W", "throughput", None, "B")]
    _, heads, rows, _ = next(t for t in compare_report.tables(p, False) if t[0].startswith("Cells in"))
    assert heads == ["cell", "power mode", "only in"]
    assert sorted(rows) == [["m · pytorch · latency", "MODE_15W", "B"],
                            ["m · pytorch · throughput", "MODE_15W", "B"]]
    out_dir = tmp_path / "o"
    rc, out, err = run_main(capsys, a, b, "--fail-on", "slower", "--out", out_dir)
    assert rc == 0, out + err
    _, csv_rows = read_csv(out_dir / "compare.csv")
    only = [(r["power_mode"], r["task"], r["note"], r["b"]) for r in csv_rows
            if r["section"] == "only_in_one_run"]
    assert sorted(only) == [("MODE_15W", "latency", "only in B", "present"),
                            ("MODE_15W", "throughput", "only in B", "present")]
    runs = [Run(d, read_meta(d)[0], read_records(d)[0], label=x) for d, x in ((a, "A"), (b, "B"))]
    series = compare_report.trend_series(runs, 200, 0)       # one trend series per mode
    assert set(series) == {("", "m", "pytorch", "MAXN"), ("", "m", "pytorch", "MODE_15W")}
    assert [i for i, *_ in series[("", "m", "pytorch", "MODE_15W")]["latency"]] == [1]


def test_runs_in_different_modes_only_share_no_cell(tmp_path, capsys):
    a = make_run(tmp_path, "a", [lat("m", "pytorch")])                   # no --power-modes
    b = make_run(tmp_path, "b", cells("MAXN", 10.0, 10.0, 5))
    rc, _, err = run_main(capsys, a, b, "--out", tmp_path / "o")
    assert rc == 2 and "share no cell" in err and "A ran in none, B in MAXN" in err


def test_runs_without_modes_have_no_power_mode_column(tmp_path, capsys):
    a = make_run(tmp_path, "a", [lat("m", "pytorch", calls(10.0, 300, 1)),
                                 thr("m", "pytorch", {1: calls(10.0, 300, 2)})])
    b = make_run(tmp_path, "b", [lat("m", "pytorch", calls(12.0, 300, 3)),
                                 thr("m", "pytorch", {1: calls(12.0, 300, 4)})])
    p = pair_of(a, b)
    assert {r["power_mode"] for r in p.perf} == {""} and set(p.noise) == {("", "pytorch", "")}
    assert not compare_report.has_modes(p)
    assert all("power mode" not in heads for _, heads, _, _ in compare_report.tables(p, False))
    out_dir = tmp_path / "o"
    rc, out, err = run_main(capsys, a, b, "--fail-on", "slower", "--out", out_dir)
    assert rc == 1, out + err
    heads, csv_rows = read_csv(out_dir / "compare.csv")
    assert heads == compare_report.CSV_COLUMNS and "power_mode" not in heads
    assert [r["verdict"] for r in csv_rows if r["section"] == "performance"] == ["slower", "slower"]
    md = (out_dir / "compare.md").read_text(encoding="utf-8")
    assert "| cell | metric | A | B | B/A | 95% CI | verdict | note |" in md
    assert "power mode" not in md and "power mode" not in out
    assert "| device | variant | pairs | between-process sd |" in md
