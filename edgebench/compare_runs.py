"""Runs for ``python -m edgebench.compare``: reading and checking a run directory (records,
run.json, raw timings), the environment a run recorded, flattened for a diff, and matching
two runs cell by cell into the rows the report shows.

A cell is device x model x variant x task x power mode x batch size (store.cell_key, plus the
batch size): a latency record is one cell at its batch_size, a throughput record one cell per
by_batch entry. The power mode is the nvpmodel mode a --power-modes run measured the cell in
("" in runs without it); cells of different modes are never paired.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import compare_stats as cs
from . import store
from .errors import UsageError

OK = ("ok", "partial")
MEMORY_MIN_MIB = 10.0     # smaller memory changes are not called "changed"
_VOLATILE = {"cur_khz", "cur_mhz", "current"}       # sampled clocks: differ on every read
_SKIP = {"unavailable", "argv", "out", "resume", "reason", "description", "license",
         "jetson_clocks_basis", "jetpack_basis"}


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ----------------------------------------------------------------------------- reading
def read_records(d: Path) -> tuple[list[dict], list[str]]:
    """The records of run directory ``d``, checked (store.read_checked, plus the figures a
    comparison needs); UsageError naming the bad input."""
    if not d.exists():
        raise UsageError(f"{d}: no such run directory")
    f = d / "results.jsonl"
    if not f.is_file():
        raise UsageError(f"{d}: no results.jsonl here (not a run directory)")
    try:
        out, warning = store.read_checked(f)
    except store.RecordsError as e:
        raise UsageError(str(e)) from None
    for r in out:
        _check(r, f"{f}: the {r['model']} {r['variant']} {r['task']} record")
    if not out:
        raise UsageError(f"{f}: no records")
    return out, [warning] if warning else []


def _check(r: dict, where: str) -> None:
    if r["status"] not in OK:
        return
    if r["task"] == "latency" and not (isinstance(r.get("latency_ms"), dict)
                                       and _num(r["latency_ms"].get("p50"))
                                       and isinstance(r.get("batch_size"), int)):
        raise UsageError(f"{where}: latency record without batch_size and latency_ms.p50")
    if r["task"] == "throughput":
        bb = r.get("by_batch")
        if not isinstance(bb, list) or not all(
                isinstance(e, dict) and isinstance(e.get("batch_size"), int) and e["batch_size"] > 0
                and (_num(e.get("latency_ms_p50")) or _num(e.get("samples_per_s"))) for e in bb):
            raise UsageError(f"{where}: throughput record without a valid by_batch list")


def read_meta(d: Path) -> tuple[dict, list[str]]:
    f = d / "run.json"
    if not f.is_file():
        return {}, [f"{d}: no run.json: its environment and start time are unknown"]
    try:
        meta = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UsageError(f"{f}: unreadable ({type(e).__name__}: {e})") from None
    if not isinstance(meta, dict):
        raise UsageError(f"{f}: not a JSON object")
    return meta, []


def device_ids(meta: dict, records: list[dict]) -> list[str]:
    """The fleet devices of a run, in run.json's order, then any others the records name."""
    ids = list((meta.get("devices") or {}).keys()) if meta.get("kind") == "fleet" else []
    return ids + sorted({r.get("device_id") or "" for r in records} - set(ids) - {""})


@dataclass
class Run:
    """One side of a comparison: a run directory, or one device of a fleet run."""
    path: Path
    meta: dict
    records: list[dict]
    device: str | None = None          # the fleet device this run stands for
    label: str = ""                    # A, B, C ... in the tables
    cells: dict = field(default_factory=dict)

    def __post_init__(self):
        recs = self.records
        if self.device is not None:
            recs = [dict(r, device_id="") for r in recs if (r.get("device_id") or "") == self.device]
        self.cells = store.latest(recs)

    @property
    def name(self) -> str:
        p = str(self.path)
        return f"{p} [device {self.device}]" if self.device is not None else p

    @property
    def created_at(self) -> str | None:
        return self.meta.get("created_at")

    def raw(self, rec: dict) -> dict | None:
        """Per-call timings of ``rec`` (store.read_raw, sha256-checked), or None."""
        try:
            raw = store.read_raw(self.path, rec)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
            raise UsageError(f"{self.path}: raw timings of {rec['model']} {rec['variant']} "
                             f"{rec['task']} unreadable ({type(e).__name__}: {e})") from None
        if raw is not None and not isinstance(raw, dict):
            raise UsageError(f"{self.path}: raw timings of {rec['model']} {rec['variant']} "
                             f"{rec['task']} are not an object")
        return raw

    def env(self) -> dict[str, str]:
        return flatten_env(self.meta, self.device)


# ------------------------------------------------------------------------- environment
def flatten_env(meta: dict, device: str | None = None) -> dict[str, str]:
    """What a run recorded about where and how it ran, as "section.key" -> text: backend
    versions (variants.*.versions), device, device_state (power mode, clocks, JetPack, CUDA,
    TensorRT), machine (Python, OS, kernel), config (profile and its settings), options, env."""
    src = meta
    if device is not None:                       # a fleet device: its own hello + settings
        src = {**(meta.get("devices") or {}).get(device, {}),
               "config": (meta.get("settings") or {}).get(device, {})}
    out: dict[str, str] = {}
    for sec in ("device", "device_state", "machine", "variants", "config", "options", "env", "data"):
        if sec in src:
            _flat(src[sec], sec, out)
    return {k: v for k, v in out.items() if not k.startswith("data.") or
            k.split(".")[1] in ("source", "n_images")}


def _flat(v, prefix: str, out: dict) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            if k not in _SKIP and k not in _VOLATILE:
                _flat(x, f"{prefix}.{k}", out)
    elif isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v):
        for i, x in enumerate(v):
            _flat(x, f"{prefix}[{i}]", out)
    elif isinstance(v, list):
        out[prefix] = " ".join(str(x) for x in v)
    else:
        out[prefix] = "" if v is None else str(v)


def env_diff(a: dict[str, str], b: dict[str, str]) -> list[tuple[str, str, str]]:
    """(key, A's value, B's value) for every key whose value differs ("-" where absent)."""
    keys = list(dict.fromkeys([*a, *b]))
    return [(k, a.get(k, "-"), b.get(k, "-")) for k in keys if a.get(k, "-") != b.get(k, "-")]


# ---------------------------------------------------------------------------- matching
@dataclass
class Pair:
    a: Run
    b: Run
    perf: list[dict] = field(default_factory=list)        # latency / throughput cells
    lost: list[dict] = field(default_factory=list)        # variants that lost equivalence
    quality: list[dict] = field(default_factory=list)     # parity and accuracy figures
    resources: list[dict] = field(default_factory=list)   # memory and energy
    status: list[dict] = field(default_factory=list)      # ok <-> failed/skipped/timeout
    only: list[dict] = field(default_factory=list)        # cells in one run only
    env: list[tuple] = field(default_factory=list)
    # (device, variant, power mode) -> (between-process sd of ln median, pairs it came from)
    noise: dict = field(default_factory=dict)

    @property
    def matched(self) -> int:
        return len(set(self.a.cells) & set(self.b.cells))


def _points(rec: dict) -> dict[int, float]:
    """Batch size -> median ms per call, from the record's summary figures."""
    if rec["task"] == "latency":
        return {rec["batch_size"]: float(rec["latency_ms"]["p50"])}
    return {e["batch_size"]: float(e["latency_ms_p50"]) if _num(e.get("latency_ms_p50"))
            else e["batch_size"] * 1000.0 / e["samples_per_s"] for e in rec["by_batch"]}


def _raw_calls(raw: dict | None, rec: dict, b: int, run: Run) -> list | None:
    if raw is None:
        return None
    x = raw.get("latency_ms") if rec["task"] == "latency" else (raw.get("by_batch_ms") or {}).get(str(b))
    if x is None:
        return None
    if not isinstance(x, list) or not x or not all(_num(v) and v > 0 for v in x):
        raise UsageError(f"{run.path}: raw timings of {rec['model']} {rec['variant']} "
                         f"{rec['task']} batch {b} are not positive numbers")
    return x


def mode_of(key: tuple) -> str:
    """The power mode of a cell key (store.cell_key): "" for a run without --power-modes."""
    return (key[4] if len(key) > 4 else "") or ""


def seed_key(key: tuple, *more) -> str:
    """The bootstrap's key text of a cell: device|model|variant|task[|mode][|more], the mode
    only when there is one (runs without modes keep the resamples they always had)."""
    mode = mode_of(key)
    return "|".join(map(str, (*key[:4], *([mode] if mode else []), *more)))


def _base(key: tuple, rec: dict) -> dict:
    return {"device": key[0], "model": key[1], "variant": key[2], "task": key[3],
            "power_mode": mode_of(key)}


def noise_pairs(run: Run) -> dict[tuple, list[tuple[float, float]]]:
    """(device, variant, power mode) -> pairs of batch-1 medians measured in two processes of
    ``run``: its latency cell and its throughput cell's step at the same batch size (in the
    same power mode), per model."""
    out: dict[tuple, list] = {}
    for key, lat in run.cells.items():
        dev, model, variant, task, mode = *key[:4], mode_of(key)
        tp = run.cells.get((dev, model, variant, "throughput", *key[4:]))
        if task != "latency" or tp is None or lat["status"] not in OK or tp["status"] not in OK:
            continue
        at = _points(tp).get(lat["batch_size"])
        if at is not None:
            out.setdefault((dev, variant, mode), []).append((_points(lat)[lat["batch_size"]], at))
    return out


def process_noise(a: Run, b: Run) -> dict[tuple, tuple[float, int]]:
    """Between-process sd per (device, variant, power mode), from both runs' pairs (a real
    change between the runs moves both halves of a pair alike, so it does not enter the
    estimate; a clocked-down mode's noise is its own)."""
    pairs: dict[tuple, list] = {}
    for run in (a, b):
        for k, v in noise_pairs(run).items():
            pairs.setdefault(k, []).extend(v)
    return {k: (cs.process_sd(v), len(v)) for k, v in pairs.items() if v}


def compare_pair(a: Run, b: Run, threshold: float, n_boot: int = cs.N_RESAMPLES,
                 seed: int = 0) -> Pair:
    p = Pair(a, b, env=env_diff(a.env(), b.env()), noise=process_noise(a, b))
    for key in [k for k in a.cells if k not in b.cells]:
        p.only.append({**_base(key, a.cells[key]), "batch_size": None, "in": a.label})
    for key in [k for k in b.cells if k not in a.cells]:
        p.only.append({**_base(key, b.cells[key]), "batch_size": None, "in": b.label})
    eq: dict[tuple, list] = {}
    for key in [k for k in a.cells if k in b.cells]:
        ra, rb = a.cells[key], b.cells[key]
        base = _base(key, ra)
        var = (*key[:3], mode_of(key))        # equivalence per variant and power mode
        e = eq.setdefault(var, [False, False, []])
        e[0] |= ra.get("equivalent") is True
        e[1] |= rb.get("equivalent") is False
        if key[3] == "parity" and ra["status"] in OK and rb["status"] == "failed":
            e[2].append(f"parity {ra['status']} -> failed"
                        + (f" ({rb.get('criterion') or rb.get('reason')})"
                           if rb.get("criterion") or rb.get("reason") else ""))
        if (ra["status"] in OK) != (rb["status"] in OK):
            p.status.append({**base, "a": ra["status"], "b": rb["status"],
                             "reason": (rb if rb["status"] not in OK else ra).get("reason", "")})
        if key[3] == "parity":            # a failed parity still has its figures: show them
            _quality(p, base, ra, rb)
        if ra["status"] not in OK or rb["status"] not in OK:
            continue
        if key[3] in ("latency", "throughput"):
            _perf(p, key, ra, rb, threshold, n_boot, seed)
        if key[3] == "accuracy":
            _quality(p, base, ra, rb)
        _resources(p, base, ra, rb, threshold)
    for var, (was_eq, now_not, why) in eq.items():
        if why or (was_eq and now_not):
            p.lost.append({"device": var[0], "model": var[1], "variant": var[2],
                           "power_mode": var[3],
                           "what": "; ".join(why + (["equivalent true -> false"]
                                                    if was_eq and now_not else []))})
    return p


def _perf(p: Pair, key, ra, rb, threshold, n_boot, seed) -> None:
    pa, pb = _points(ra), _points(rb)
    raw_a, raw_b = p.a.raw(ra), p.b.raw(rb)
    for bs in [x for x in pa if x not in pb]:
        p.only.append({**_base(key, ra), "batch_size": bs, "in": p.a.label})
    for bs in [x for x in pb if x not in pa]:
        p.only.append({**_base(key, rb), "batch_size": bs, "in": p.b.label})
    for bs in [x for x in pa if x in pb]:
        xa, xb = _raw_calls(raw_a, ra, bs, p.a), _raw_calls(raw_b, rb, bs, p.b)
        if xa is not None and xb is not None:
            r = cs.ratio_ci(xa, xb, n_boot, seed, key=seed_key(key, bs))
            sd = p.noise.get((key[0], key[2], mode_of(key)), (None, 0))[0]
            r = cs.widen(r, sd)
            ma, mb = float(np.median(xa)), float(np.median(xb))
            note = cs.note(r, threshold)
            if sd is None:
                note = "; ".join(x for x in (note, ("process noise unknown (no latency and "
                                              "throughput cells of one model)")) if x)
        else:
            ma, mb = pa[bs], pb[bs]
            r = cs.Ratio(mb / ma)
            missing = [x.label for x, raw in ((p.a, xa), (p.b, xb)) if raw is None]
            note = f"no CI: no raw timings in {' and '.join(missing)}"
        row = {**_base(key, ra), "batch_size": bs, "time_ratio": r,
               "verdict": cs.verdict(r, threshold), "note": note}
        if key[3] == "latency":
            row.update(metric="p50 latency ms", a=ma, b=mb, ratio=r)
        else:
            row.update(metric="samples/s", a=bs * 1000.0 / ma, b=bs * 1000.0 / mb, ratio=r.inverse())
        p.perf.append(row)


def _quality(p: Pair, base, ra, rb) -> None:
    fields = {"parity": ("top1_agreement", "top5_agreement", "max_abs_diff", "cosine_min"),
              "accuracy": ("top1", "top5")}.get(base["task"], ())
    for f in fields:
        va, vb = ra.get(f), rb.get(f)
        if _num(va) or _num(vb):
            p.quality.append({**base, "metric": f, "a": va, "b": vb,
                              "change": vb - va if _num(va) and _num(vb) else None})


def _resources(p: Pair, base, ra, rb, threshold) -> None:
    ma, mb = ra.get("memory_mb") or {}, rb.get("memory_mb") or {}
    pairs = [(f"memory {k} MiB", ma.get(k), mb.get(k)) for k in ("peak", "delta")]
    pairs.append(("energy mJ/sample", ra.get("energy_mj_per_sample"), rb.get("energy_mj_per_sample")))
    for metric, va, vb in pairs:
        if not (_num(va) and _num(vb)):
            continue
        ratio = vb / va if va else None
        big = ratio is not None and (ratio > 1 + threshold or ratio < 1 / (1 + threshold))
        if metric.startswith("memory") and abs(vb - va) < MEMORY_MIN_MIB:
            big = False                   # RSS sampling moves a few MiB between runs
        p.resources.append({**base, "metric": metric, "a": va, "b": vb, "ratio": ratio,
                            "note": "changed" if big else ""})
