"""JAX's per-operation profile for the ``layers`` task: ``jax.profiler.trace`` around ``runs``
calls of the compiled forward pass, read back with ``jax.profiler.ProfileData`` (no
TensorBoard needed). XLA's CPU and GPU runtimes emit one event per HLO instruction they run
(stat ``hlo_op``, with the call's ``run_id``): an instruction's time is the median over the
runs of its events' time in one run. The compiled HLO (``executable.as_text()``) says what
each instruction is; a fusion counts as the heaviest operation it calls.

Chosen over the compiled HLO's cost analysis (``cost_analysis()``), which gives FLOPs and
bytes per module, estimated, not time per operation."""
from __future__ import annotations

import re
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

WARMUP = 3
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*.*?\s([a-z][\w\-]*)\((.*)$")
_COMP = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_SKIP = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


def hlo_ops(text: str) -> dict[str, tuple[str, bool]]:
    """{instruction name: (what it computes, depthwise?)} from compiled HLO text: a fusion
    is ``fusion(<the opcodes of the computation it calls>)``."""
    comps: dict[str, list[tuple[str, str]]] = defaultdict(list)
    instrs: dict[str, tuple[str, str]] = {}
    comp = ""
    for line in text.splitlines():
        m = _COMP.match(line)
        if m and "=" not in line.split("{")[0]:
            comp = m.group(1)
            continue
        m = _INSTR.match(line)
        if m:
            comps[comp].append((m.group(2), m.group(3)))
            instrs[m.group(1)] = (m.group(2), m.group(3))
    out = {}
    for name, (opcode, rest) in instrs.items():
        body = [(opcode, rest)]
        called = re.search(r"calls=%?([\w.\-]+)", rest)
        if opcode == "fusion" and called:
            body = comps.get(called.group(1), [])
        ops = sorted({o for o, _ in body if o not in _SKIP})
        dw = any(o == "convolution" and _groups(r) > 1 for o, r in body)
        out[name] = (f"fusion({', '.join(ops)})" if opcode == "fusion" else opcode, dw)
    return out


def _groups(rest: str) -> int:
    m = re.search(r"feature_group_count=(\d+)", rest)
    return int(m.group(1)) if m else 1


def profile(predictor, batch, runs: int) -> dict:
    import jax

    batch = batch.astype("float32")
    for _ in range(WARMUP):
        predictor(batch)
    executable = predictor._executables[batch.shape]
    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp):
            for _ in range(runs):
                predictor(batch)
        traces = sorted(Path(tmp).rglob("*.xplane.pb"))
        if not traces:
            raise RuntimeError("jax.profiler.trace wrote no .xplane.pb")
        data = jax.profiler.ProfileData.from_file(str(traces[-1]))
    per_run: dict = defaultdict(lambda: defaultdict(float))
    calls: dict = defaultdict(int)
    for plane in data.planes:
        for line in plane.lines:
            for e in line.events:
                stats = dict(e.stats)
                op = stats.get("hlo_op")
                if not op:
                    continue
                per_run[stats.get("run_id")][op] += e.duration_ns
                calls[op] += 1
    runs_seen = list(per_run.values())[-runs:]
    if not runs_seen:
        raise RuntimeError("the JAX profile holds no HLO operation events (stat hlo_op)")
    ops = hlo_ops(executable.as_text())
    where = jax.devices()[0].platform.upper()
    names = dict.fromkeys(op for r in runs_seen for op in r)
    layers = []
    for name in names:
        what, dw = ops.get(name, ("", False))
        layers.append({"name": name, "op": what, "where": where, "depthwise": dw,
                       "calls": max(1, calls[name] // len(per_run)),
                       "ms": statistics.median(r.get(name, 0.0) for r in runs_seen) / 1e6})
    return {"profiler": "jax.profiler.trace, read with jax.profiler.ProfileData: time per HLO "
                        "instruction (XLA's runtime events)",
            "layers": layers, "matching": "op type",
            "notes": ["XLA fuses operations: a fusion counts as the heaviest operation it calls"]}
