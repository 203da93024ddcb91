"""JAX's per-operation profile for the ``layers`` task: ``jax.profiler.trace`` around ``runs``
calls of the compiled forward pass, read back with ``jax.profiler.ProfileData`` (no
TensorBoard needed). XLA's CPU and GPU runtimes emit one event per HLO instruction they run
(stat ``hlo_op``, with the call's ``run_id``). XLA's CPU thunk executor runs some instructions
asynchronously (a convolution hands its work to Eigen's pool): the instruction's own event
ends when the work is handed over, and an event ``end: <instruction>`` marks when it is done.
Counting the events alone missed most of each convolution's time. So an instruction spans
from its event's start to its ``end:`` mark, and instructions the executor runs at the same
time share that wall time evenly: the instructions' times add up to the wall time they
cover. Its time is the median over the runs. The compiled HLO (``executable.as_text()``) says
what each instruction is; a fusion counts as the heaviest operation it calls.

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
    per_run, calls = op_times(data)
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
            "notes": ["XLA fuses operations: a fusion counts as the heaviest operation it calls",
                      "an operation spans from its start to its completion (XLA runs some "
                      "asynchronously); operations running at the same time share that time"]}


def op_times(data) -> tuple[dict, dict]:
    """({run_id: {instruction: ns}}, {instruction: events}) from a ``ProfileData``: each
    instruction's span (its event's start to its ``end:`` mark, or its event's end) with
    the wall time shared among the instructions in flight together."""
    starts: dict = defaultdict(list)     # instruction -> [(start, event end, run_id)]
    done: dict = defaultdict(list)       # instruction -> [when its end: mark ended]
    for plane in data.planes:
        for line in plane.lines:
            for e in line.events:
                stats = dict(e.stats)
                op = stats.get("hlo_op")
                if op:
                    starts[op].append((e.start_ns, e.start_ns + e.duration_ns,
                                       stats.get("run_id")))
                elif e.name.startswith("end: "):
                    done[e.name[5:]].append(e.start_ns + e.duration_ns)
    spans: dict = defaultdict(list)      # run_id -> [(start, end, instruction)]
    calls: dict = {}
    for op, events in starts.items():
        events.sort()
        marks = sorted(done.get(op, ()))
        j = 0
        for start, end, run_id in events:
            while j < len(marks) and marks[j] < start:
                j += 1
            if j < len(marks):            # its completion: the next end: mark after it
                end = max(end, marks[j])
                j += 1
            spans[run_id].append((start, end, op))
        calls[op] = len(events)
    return {run_id: _shared(s) for run_id, s in spans.items()}, calls


def _shared(spans: list) -> dict:
    """Wall time per instruction, each stretch shared evenly by the instructions in flight."""
    edges = sorted([(s, 1, op) for s, _, op in spans] + [(e, -1, op) for _, e, op in spans],
                   key=lambda t: (t[0], t[1]))
    out: dict = defaultdict(float)
    active: dict = defaultdict(int)
    last = None
    for t, step, op in edges:
        if active and last is not None and t > last:
            for a in active:
                out[a] += (t - last) / len(active)
        last = t
        active[op] += step
        if not active[op]:
            del active[op]
    return out
