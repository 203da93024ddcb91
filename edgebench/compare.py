"""``python -m edgebench.compare RUN_A RUN_B [RUN_C ...]``: did it get slower, and is it real?

Matches the cells of two or more runs (device x model x variant x task x power mode x batch
size), and for each pair prints and writes the p50 latency and throughput ratios with a 95%
bootstrap CI from the raw per-call timings, a verdict per cell at a minimum effect size, lost parity/equivalence
(first), parity, accuracy, memory and energy changes, cells in one run only, and what differs
between the runs' environments (run.json). docs/compare.md explains the statistics.

Code: this module (command line, ordering, the gate), ``compare_runs`` (reading runs, the
environment diff, matching), ``compare_stats`` (bootstrap, verdicts), ``compare_report``
(console, compare.md, compare.csv, trend plots).
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import sys
import textwrap
from pathlib import Path

from .errors import (
    EXIT_CELLS_FAILED,
    EXIT_OK,
    ArgumentParser,
    UsageError,
    check_out_dir,
    make_out_dir,
    run_command,
)
from .util import REPO_ROOT

EPILOG = """\
pairs: two runs -> A vs B. More runs are put in run.json created_at order (command-line order
where a run has none) and compared consecutively (A->B, B->C, ...) and first vs last; a trend
plot per model x variant goes to OUT/plots/. One fleet run: its devices are compared (each
against the first of --devices, default all devices in run.json order).

power modes: a run made with --power-modes has each cell once per nvpmodel mode; a cell is
compared only with the same cell in the same mode (MAXN with MAXN), a mode one run lacks is
listed as "in one run only", and the tables and compare.csv gain a power mode column.

verdict (per cell, on the ratio of median call times B/A): "slower" only when the whole 95% CI
lies above 1 + threshold, "faster" when it lies below 1/(1 + threshold), else "no significant
change". Without raw timings (runs made before they were recorded) the point ratio is judged
the same way and the cell says "no CI".

exit codes: 0 compared (and, with --fail-on, the gate passed); 1 --fail-on slower and a cell is
significantly slower (a "no CI" point-ratio verdict counts too) or a variant lost equivalence
(--fail-on parity: lost equivalence only), in a comparison whose B is the newest run; 2 bad input (missing run directory, no
results.jsonl, malformed records, runs sharing no cell).

example (CI gate against a stored baseline):
  python -m edgebench.compare results/baseline results/run-new --fail-on slower --threshold 5
"""


NAME = "edgebench compare"     # the command in its messages ("edgebench compare: error: ...")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="python -m edgebench.compare", error_name=NAME,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(__doc__.split("\n\n")[1].replace("\n", " "), 92), epilog=EPILOG)
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories (with results.jsonl)")
    p.add_argument("--devices", nargs="+", metavar="ID",
                   help="fleet device ids. With one fleet run: compare these devices, the first "
                        "as baseline (default: every device of the run). With several runs: "
                        "compare only these devices' cells")
    p.add_argument("--threshold", default="5", metavar="PERCENT",
                   help="smallest change that counts, in percent (default 5): a cell is slower "
                        "only when its whole CI lies beyond it")
    p.add_argument("--fail-on", choices=("slower", "parity"), default=None,
                   help="exit 1 when a cell got significantly slower or a variant lost "
                        "equivalence (slower), or only on lost equivalence (parity). Default: "
                        "never (exit 0)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="where compare.md, compare.csv and plots/ go. Default: a new "
                        "results/compare-<UTC timestamp> (run directories are left untouched)")
    p.add_argument("--resamples", type=int, default=2000, metavar="N",
                   help="bootstrap resamples per cell (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0): same "
                   "inputs, same output")
    return p


def parse_threshold(text: str) -> float:
    try:
        v = float(str(text).strip().rstrip("%"))
    except ValueError:
        raise UsageError(f"--threshold {text!r}: not a number of percent (e.g. 5)") from None
    if not 0 <= v < 100:
        raise UsageError(f"--threshold {text}: must be a percentage in [0, 100)")
    return v / 100.0


def load_runs(paths: list[str], devices: list[str] | None) -> tuple[list, list[str], bool]:
    """The runs to compare (labelled A, B, ...), notes for the header, and whether they are
    devices of one fleet run (compared against the first) rather than runs in time order."""
    from .compare_runs import Run, device_ids, read_meta, read_records

    notes: list[str] = []
    loaded = []
    for text in paths:
        d = Path(text)
        if d.name == "results.jsonl" and d.is_file():
            d = d.parent
        recs, warns = read_records(d)
        meta, w2 = read_meta(d)
        notes += warns + w2
        loaded.append((d, meta, recs))
    if len(loaded) == 1:
        d, meta, recs = loaded[0]
        have = device_ids(meta, recs)
        if len(have) < 1 or (len(have) < 2 and not devices):
            raise UsageError(f"{d}: one run given and it is not a fleet run with two devices; "
                             "give two or more run directories")
        want = devices or have
        missing = [x for x in want if x not in have]
        if missing:
            raise UsageError(f"{d}: no device {', '.join(missing)} (devices: {', '.join(have)})")
        if len(want) < 2:
            raise UsageError(f"{d}: --devices needs two or more devices to compare")
        runs = [Run(d, meta, recs, device=x) for x in want]
        notes.append(f"Devices of fleet run {d}, each compared with {want[0]}.")
        device_mode = True
    else:
        runs = []
        for d, meta, recs in loaded:
            if devices:
                recs = [r for r in recs if (r.get("device_id") or "") in devices]
                if not recs:
                    raise UsageError(f"{d}: no records of device {', '.join(devices)}")
                if len(devices) == 1:      # the device is the run: match across device names
                    recs = [dict(r, device_id="") for r in recs]
            runs.append(Run(d, meta, recs))
        device_mode = False
        if len(runs) > 2:
            if all(r.created_at for r in runs):
                runs.sort(key=lambda r: r.created_at)
                notes.append("Runs ordered by run.json created_at; compared consecutively and "
                             "first vs last.")
            else:
                notes.append("Runs kept in command-line order (a run.json has no created_at); "
                             "compared consecutively and first vs last.")
    for i, r in enumerate(runs):
        r.label = chr(ord("A") + i) if i < 26 else f"R{i + 1}"
    return runs, notes, device_mode


def make_pairs(runs: list, device_mode: bool) -> list[tuple]:
    if device_mode:
        return [(runs[0], r) for r in runs[1:]]
    pairs = list(itertools.pairwise(runs))
    if len(runs) > 2:
        pairs.append((runs[0], runs[-1]))
    return pairs


def gate(pairs: list, fail_on: str | None, device_mode: bool) -> tuple[int, str]:
    """Exit code and the sentence that says why. Judged on the comparisons whose B is the
    newest run (all comparisons for fleet devices)."""
    from . import compare_stats as cs

    if fail_on is None:
        return EXIT_OK, "Gate: none (--fail-on not given); exit 0."
    newest = pairs[-1].b if pairs else None
    judged = pairs if device_mode else [p for p in pairs if p.b is newest]
    def mode(r: dict) -> str:
        return f" [{r['power_mode']}]" if r.get("power_mode") else ""

    slow = [f"{p.a.label}->{p.b.label} {r['model']} {r['variant']} {r['task']}{mode(r)} "
            f"b={r['batch_size']}" for p in judged for r in p.perf if r["verdict"] == cs.SLOWER]
    lost = [f"{p.a.label}->{p.b.label} {r['model']} {r['variant']}{mode(r)}"
            for p in judged for r in p.lost]
    bad = lost + (slow if fail_on == "slower" else [])
    if bad:
        return EXIT_CELLS_FAILED, (f"Gate --fail-on {fail_on}: FAILED (exit 1): "
                                   + "; ".join(bad[:10]) + (" ..." if len(bad) > 10 else ""))
    return EXIT_OK, f"Gate --fail-on {fail_on}: passed (exit 0)."


def _modes_apart(a, b) -> str:
    """What to add to "share no cell" when the runs' power modes are what keeps them apart."""
    from .compare_runs import mode_of

    ma, mb = ({mode_of(k) for k in r.cells} for r in (a, b))
    if ma == mb or not ({k[:4] for k in a.cells} & {k[:4] for k in b.cells}):
        return ""
    def names(m):
        return ", ".join(sorted(x or "none" for x in m))
    return f" x power mode: {a.label} ran in {names(ma)}, {b.label} in {names(mb)}"


def run(args) -> int:
    from . import compare_report as rep
    from .compare_runs import compare_pair

    threshold = parse_threshold(args.threshold)
    if args.resamples < 100:
        raise UsageError(f"--resamples {args.resamples}: use at least 100")
    if args.out:
        check_out_dir("--out", args.out)
    runs, notes, device_mode = load_runs(args.runs, args.devices)
    pairs = []
    for a, b in make_pairs(runs, device_mode):
        p = compare_pair(a, b, threshold, args.resamples, args.seed)
        if not p.matched:
            raise UsageError(f"{a.name} and {b.name} share no cell (model x variant x task"
                             + _modes_apart(a, b) + ")")
        pairs.append(p)
    out = Path(args.out) if args.out else \
        REPO_ROOT / "results" / f"compare-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}"
    make_out_dir("--out", out)
    header = [*notes, (
        f"Threshold {threshold * 100:.3g}%: a cell is slower when the whole 95% CI of the ratio "
        f"of median call times lies above {1 + threshold:.3f} (faster: below "
        f"{1 / (1 + threshold):.3f}); CI from {args.resamples} circular-block-bootstrap "
        f"resamples of each run's calls (seed {args.seed}). Throughput ratio = inverse of the "
        "ratio of median call times at the same batch size. 'no CI': no raw timings recorded.")]
    plots = []
    if not device_mode and len(runs) > 2:
        plots = rep.trend_plots(out / "plots", runs, args.resamples, args.seed)
    code, gate_line = gate(pairs, args.fail_on, device_mode)
    rep.print_console(pairs, runs, header, threshold * 100)
    rep.write_markdown(out / "compare.md", pairs, runs, header, plots, gate_line)
    rep.write_csv(out / "compare.csv", pairs)
    print(gate_line)
    print(f"wrote {out / 'compare.md'}, {out / 'compare.csv'}"
          + (f" and {len(plots)} trend plot(s) in {out / 'plots'}" if plots else ""))
    return code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(NAME, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
