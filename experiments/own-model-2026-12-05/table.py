"""The closing table of each run, from its records: per variant the status of each task,
parity (max abs diff; top-1 agreement, or the number of outputs compared), p50 latency and
Top-1. Reads only the records.

    .venv/bin/python experiments/own-model-2026-12-05/table.py RESULTS.jsonl...
"""
from __future__ import annotations

import argparse
import json

TASKS = ("parity", "accuracy", "latency", "throughput")


def _num(v, fmt: str) -> str:
    return "" if v is None else format(v, fmt)


def rows(path: str) -> list[str]:
    recs = [json.loads(ln) for ln in open(path, encoding="utf-8") if ln.strip()]
    latest = {(r["model"], r["variant"], r["task"]): r for r in recs}   # the last record wins
    out = []
    for m in dict.fromkeys(r["model"] for r in recs):
        info = next(r["model_info"] for r in recs if r["model"] == m and r.get("model_info"))
        what = (f"{info['num_classes']} classes" if info.get("num_classes") is not None
                else f"{len(info['outputs'])} outputs")
        out += [f"### {m} ({info['kind']}, {what}; parity reference: {info['reference']})", "",
                "| variant | " + " | ".join(TASKS) + " | max abs diff | top-1 agree | p50 ms | top-1 % |",
                "|---|" + "---|" * (len(TASKS) + 4)]
        for v in dict.fromkeys(r["variant"] for r in recs if r["model"] == m):
            cell = {t: latest.get((m, v, t)) or {} for t in TASKS}
            status = [cell[t].get("status", "–") for t in TASKS]
            par = cell["parity"]
            agree = (_num(par.get("top1_agreement"), ".3f") if par.get("top1_agreement") is not None
                     else f"{len(par['outputs'])} outputs" if par.get("outputs") else "")
            p50 = (cell["latency"].get("latency_ms") or {}).get("p50")
            out.append(f"| {v} | {' | '.join(status)} | {_num(par.get('max_abs_diff'), '.2e')} | "
                       f"{agree} | {_num(p50, '.3f')} | {_num(cell['accuracy'].get('top1'), '.2f')} |")
        skipped = sorted({f"{v}: {r['reason']}" for (mm, v, _), r in latest.items()
                          if mm == m and r["status"] == "skipped"})
        out += [""] + [f"- {x}" for x in skipped] + [""]
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", help="results.jsonl of each run")
    for p in ap.parse_args().records:
        print("\n".join(rows(p)))
