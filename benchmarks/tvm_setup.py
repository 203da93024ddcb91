"""What the TVM study scripts start from: a model and its tuning database on this machine's
host target, lowered the way the database was tuned, and a kernel built alone.

Used by the experiment scripts that look inside a tuned network
(experiments/tvm-kernel-vs-network-2026-11-26/, experiments/tvm-winograd-2026-11-26/)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


@dataclasses.dataclass
class TunedModel:
    target: Any
    threads: dict
    spec: Any
    weights_note: str
    db_dir: Path
    mod: Any            # the imported Relax module, batch 1
    lowered: Any        # lowered in the database's layout and conv2d choice

    def header(self) -> dict:
        """The fields every record of these scripts starts with."""
        from converters.tvm import targets

        return {"model": self.spec.name, "weights": self.spec.weights,
                "weights_note": self.weights_note, "database": str(self.db_dir),
                "target": targets.target_dict(self.target), "tvm_threads": self.threads,
                **targets.tvm_versions()}


def load(model: str, tuning_dir: str, need_database: bool = True,
         target: str = "host") -> TunedModel:
    """``model`` (auto weights) and its database in ``tuning_dir`` for ``target`` (any value
    ``targets.resolve_target`` takes; a database tuned on another CPU of the same ISA can be
    built and run here by naming that CPU's target)."""
    from converters.tvm import database, importer, lowering, passes, targets
    from edgebench.models import make_spec, resolve_weights

    target, _ = targets.resolve_target(target)
    threads = targets.configure_threads(target)
    weights, note = resolve_weights(model, "auto", 0)
    spec = make_spec(model, weights)
    db_dir = database.db_dir_for(tuning_dir, target, spec.name, spec.input_size)
    if need_database and not database.database_exists(db_dir):
        raise SystemExit(f"no database for {spec.name} on this target in {tuning_dir} "
                         f"(looked in {db_dir})")
    mod, _, _ = importer.import_model(spec.build(), (1, *spec.input_size))
    lowered = passes.lower_for_tuning(mod, target, **lowering.lowering_for(target, db_dir))
    return TunedModel(target, threads, spec, note, Path(db_dir), mod, lowered)


def kernel_alone(func, target, seed: int = 0):
    """A PrimFunc built as a module of its own, with random arguments: (library, tensors)."""
    from converters.tvm import build

    return build.kernel_alone(func, target, seed)


def timed_alone(func, target, seed: int = 0):
    """``func`` built alone (``kernel_alone``) with an evaluator that times it as the tuner's
    runner times a candidate (TuneConfig's number, repeat, min_repeat_ms): (evaluator,
    tensors); ``float(np.mean(evaluator(*tensors).results))`` is one measurement in seconds."""
    import tvm

    from converters.tvm.tuning import TuneConfig

    cfg = TuneConfig()
    lib, tensors = kernel_alone(func, target, seed)
    return lib.mod.time_evaluator("main", tvm.cpu(), number=cfg.number, repeat=cfg.repeat,
                                  min_repeat_ms=cfg.min_repeat_ms), tensors


def tuned_network(m: TunedModel, db_dir=None):
    """The network as the suite builds it from a database (``m.db_dir`` unless given):
    (applied IRModule, its functions by name, a Relax VM on the CPU)."""
    import tvm
    from tvm.runtime.vm import VirtualMachine

    from converters.tvm import build

    applied = build.apply_database(m.lowered, m.target, db_dir or m.db_dir)
    funcs = {gv.name_hint: f for gv, f in applied.functions_items()}
    return applied, funcs, VirtualMachine(build.compile_module(applied, m.target), tvm.cpu(0))


def network_input(m: TunedModel, seed: int = 0):
    """The batch-1 input the study scripts feed a tuned network: seeded standard-normal, as a
    TVM tensor on the CPU."""
    import numpy as np
    import tvm

    return tvm.runtime.tensor(np.random.RandomState(seed).standard_normal(
        (1, *m.spec.input_size)).astype("float32"))


def ort_arm(spec, x, cache_dir="results/cache"):
    """ONNX Runtime's CPU session of ``spec`` as the suite makes it (its threads on the
    physical cores), as an arm of ``alternate``: a call of one ignored argument on ``x``."""
    import onnxruntime as ort

    from converters.onnxruntime.export import export_onnx
    from converters.onnxruntime.session import session_options
    from edgebench.util import physical_cores

    sess = ort.InferenceSession(str(export_onnx(spec, Path(cache_dir)).path),
                                session_options(physical_cores()),
                                providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    return lambda _: sess.run(None, feed)


def alternate(arms: dict, rounds: int, calls: int, label: str = "") -> dict:
    """Each arm (a call of one ignored argument) warmed by 5 calls, then timed ``calls``
    calls a round for ``rounds`` rounds, the arms' order reversed every other round (ABBA,
    so the machine's drift hits every arm alike): {arm: [ms per call]}."""
    import sys

    from edgebench.measure import timed_calls

    for _ in range(5):
        for call in arms.values():
            call(None)
    times: dict = {a: [] for a in arms}
    names = list(arms)
    for r in range(rounds):
        for a in (names if r % 2 == 0 else names[::-1]):
            times[a].extend(timed_calls(arms[a], None, calls, 0.0, 1e6).tolist())
        if label:
            print(f"[{label}] round {r + 1}/{rounds}", file=sys.stderr, flush=True)
    return times


def p50_table(times: dict, base: str = "tvm", ref: str = "ort") -> dict:
    """{arm: {p50_ms, min_ms, n, vs_<base>_p50, vs_<ref>_p50}} from ``alternate``'s times."""
    import numpy as np

    rows = {}
    for a, v in times.items():
        v = np.asarray(v)
        rows[a] = {"p50_ms": round(float(np.median(v)), 3), "min_ms": round(float(v.min()), 3),
                   "n": int(v.size)}
    for row in rows.values():
        row[f"vs_{base}_p50"] = round(row["p50_ms"] / rows[base]["p50_ms"], 4)
        row[f"vs_{ref}_p50"] = round(row["p50_ms"] / rows[ref]["p50_ms"], 4)
    return rows
