"""The trials a database spent on the model's stem: the first conv (``fused_conv2d_add*``)
and the input's transpose kernel (``transpose*``), read from its records for the tasks of
the lowering it was tuned with. The copy's new stem task gets as many, so both databases
hold the same total.

    .venv/bin/python experiments/tvm-input-conv-2026-11-28/stem_trials.py DB_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main() -> None:
    from converters.tvm import database, importer, passes, targets
    from edgebench.models import make_spec, resolve_weights

    db = Path(sys.argv[1])
    model = db.name.rsplit("-", 1)[0]
    target, _ = targets.resolve_target("host")
    weights, _ = resolve_weights(model, "auto", 0)
    spec = make_spec(model, weights)
    mod, _, _ = importer.import_model(spec.build(), (1, *spec.input_size))
    lowered = passes.lower_for_tuning(mod, target, **passes.lowering_for(target, db))
    rows = database.tuning_summary(db, passes.extract_tasks(lowered, target))["per_task"]
    stem = [r for r in rows if r["name"].startswith(("fused_conv2d_add", "transpose"))]
    print(f"{model}: {stem}", file=sys.stderr)
    print(sum(r["trials"] for r in stem))


if __name__ == "__main__":
    main()
