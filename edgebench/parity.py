"""python -m edgebench.parity: compare variants with the PyTorch FP32 reference, nothing else.

Runs the parity task alone (same workers, same records as edgebench.full) and prints a table.
"""
from __future__ import annotations

import sys
from pathlib import Path

from . import cli, store
from .errors import run_command

PROG = "edgebench parity"


def main(argv: list[str] | None = None) -> int:
    parser = cli.build_parser(
        prog="python -m edgebench.parity", default_tasks=("parity",), name=PROG,
        description="Check that each variant computes the same thing as PyTorch FP32 on the same "
                    "preprocessed images: top-1/top-5 agreement, max/mean |logit difference|, "
                    "minimum cosine similarity. FP32 variants pass at max_abs_diff <= --parity-atol "
                    "and full top-1 agreement; reduced-precision variants on top-k agreement.")
    args = parser.parse_args(argv)
    args.tasks = ["parity"]

    def body() -> int:
        rc = cli.run(args, cli.validate(args), title=PROG)
        out = Path(args.out)  # cli.run sets it to the run directory it used
        print_table(store.read(out / "results.jsonl"))
        return rc

    return run_command(PROG, body)


def print_table(records: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="Parity against PyTorch FP32")
    for col in ("model", "variant", "status", "images", "top1 agree", "top5 agree",
                "max |Δ|", "max |Δ| / max |ref|", "mean |Δ|", "cosine min", "ref classes", "note"):
        t.add_column(col, justify="right" if col not in ("model", "variant", "status", "note") else "left")
    for r in store.latest(records).values():
        if r["task"] != "parity":
            continue
        if "max_abs_diff" in r:
            t.add_row(r["model"], r["variant"], r["status"], str(r["n_images"]),
                      *(f"{r[k]:.4f}" if r.get(k) is not None else "n/a"
                        for k in ("top1_agreement", "top5_agreement")),
                      f"{r['max_abs_diff']:.2e}",
                      f"{r['max_rel_diff']:.2e}" if r.get("max_rel_diff") is not None else "",
                      f"{r['mean_abs_diff']:.2e}",
                      f"{r['cosine_min']:.6f}", str(r.get("ref_distinct_classes") or ""),
                      r.get("criterion", "") if r["status"] == "failed" else "")
        else:
            t.add_row(r["model"], r["variant"], r["status"], *[""] * 8, (r.get("reason") or "")[:80])
    console = Console()
    if not console.is_terminal:
        console = Console(width=180)  # piped: don't squeeze the columns to 80
    console.print(t)


if __name__ == "__main__":
    sys.exit(main())
