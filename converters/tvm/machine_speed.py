"""How fast this machine ran while a tuning session measured its candidates.

The tuner keeps each task's fastest candidate as measured at that moment, so a database tuned
while the machine ran slow holds worse picks
(experiments/FINDINGS.md#the-same-command-does-not-give-the-same-database-twice). After every
measured batch the loop times two fixed references, kept in ``tuning.json``: compute (an
L1-resident multiply loop pinned to each CPU in turn) and memory (a 64 MiB copy), each the
median of three runs. Candidates measured elsewhere (RPC, GPU) are not traced."""
from __future__ import annotations

import os
import statistics
import time

COMPUTE_FLOATS, COMPUTE_LOOPS = 4096, 4000      # 16 KiB per array: in L1 on any CPU
MEMORY_BYTES = 64 << 20
REPEATS = 3
MAX_CPUS = 16                                   # bounds the probe's cost on big machines


class Probe:
    """Times the references; keeps the buffers between calls (no allocation in the timing)."""

    def __init__(self):
        import numpy as np

        self._a = np.random.default_rng(0).random(COMPUTE_FLOATS, dtype=np.float32)
        self._c = np.empty_like(self._a)
        self._src = np.ones(MEMORY_BYTES // 4, dtype=np.float32)
        self._dst = np.empty_like(self._src)
        self.cpus = sorted(os.sched_getaffinity(0))[:MAX_CPUS]

    def _compute_ms(self) -> float:
        import numpy as np

        runs = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            for _ in range(COMPUTE_LOOPS):
                np.multiply(self._a, self._a, out=self._c)
            runs.append((time.perf_counter() - t) * 1e3)
        return statistics.median(runs)

    def _memory_ms(self) -> float:
        import numpy as np

        runs = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            np.copyto(self._dst, self._src)
            runs.append((time.perf_counter() - t) * 1e3)
        return statistics.median(runs)

    def sample(self) -> dict:
        """{"compute_ms": [per CPU, in self.cpus' order], "memory_ms": x}."""
        allowed = os.sched_getaffinity(0)
        compute = []
        try:
            for cpu in self.cpus:
                os.sched_setaffinity(0, {cpu})
                compute.append(round(self._compute_ms(), 3))
        finally:
            os.sched_setaffinity(0, allowed)
        return {"compute_ms": compute, "memory_ms": round(self._memory_ms(), 3)}


def session_record(trace: list, runner: str) -> dict:
    """What a session's record keeps: the summary of the trace, with the probe's error if it
    failed (the samples before it are kept), or why nothing was traced."""
    if runner != "local":
        return {"samples": 0, "not_traced": f"candidates measured by the runner '{runner}', "
                                            "not on this CPU"}
    out = summarize([x for x in trace if "error" not in x])
    errors = [x["error"] for x in trace if "error" in x]
    if errors:
        out["error"] = errors[0]
    return out


def without_trace(record: dict | None) -> dict | None:
    """The record for the console's brief summary (the full trace stays in the files)."""
    return {k: v for k, v in record.items() if k != "trace"} if record else record


def summarize(trace: list) -> dict:
    """The session's record: the references' sizes, the trace (trials done, task, sample),
    and the spread of each reference (slowest / fastest: 1.0 is a machine that held still)."""
    out = {"reference": {"compute": f"{COMPUTE_LOOPS} x float32 multiply of {COMPUTE_FLOATS} "
                                    "elements, pinned to each CPU in turn",
                         "memory": f"copy of {MEMORY_BYTES >> 20} MiB", "repeats": REPEATS},
           "samples": len(trace), "trace": trace}
    if not trace:
        return out
    cpus = len(trace[0]["compute_ms"])
    per_cpu = [[s["compute_ms"][k] for s in trace] for k in range(cpus)]
    memory = [s["memory_ms"] for s in trace]
    out["compute_ms"] = [_spread(v) for v in per_cpu]
    out["memory_ms"] = _spread(memory)
    return out


def _spread(values: list) -> dict:
    return {"median": round(statistics.median(values), 3), "min": min(values),
            "max": max(values), "max_over_min": round(max(values) / min(values), 3)}


def describe(summary: dict) -> str:
    """One line for the tuner's console."""
    if not summary.get("samples"):
        return "machine speed: not traced"
    slowest = max(summary["compute_ms"], key=lambda s: s["max_over_min"])
    return (f"machine speed over {summary['samples']} batches: compute reference "
            f"{slowest['min']:.2f}-{slowest['max']:.2f} ms on its most variable CPU "
            f"(x{slowest['max_over_min']:.2f}), memory {summary['memory_ms']['min']:.1f}-"
            f"{summary['memory_ms']['max']:.1f} ms (x{summary['memory_ms']['max_over_min']:.2f})")
