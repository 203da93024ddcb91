"""Per-model tuning recipes: the options each study model's best CPU database was tuned with.

A new database on an x86-64 LLVM target takes its model's recipe for every option the user
leaves unset (``--recipe none``: the plain defaults); it is recorded in ``tuning.json`` and in
every run record. A recipe holds only options that gained on every x86 CPU measured; other
targets get none (experiments/FINDINGS.md#model-recipes).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import database, targets

CHOICES = ("auto", "none")      # --recipe

# The options a recipe may set (TuneConfig / argparse names) and the plain default of each
# where neither the user nor a recipe sets it (None: the database's, else passes.py's).
OPTIONS = {"conv2d": None, "out_channels": None, "runner_caches": None,
           "design_space": "auto", "allocation": "uniform"}
# How a search is run: a resumed session repeats its database's recipe for these; the
# others are the database's own (passes.py / runner.py read them from it).
SESSION_OPTIONS = ("design_space", "allocation")


@dataclass(frozen=True)
class Recipe:
    model: str
    options: dict
    evidence: tuple = field(default=())     # FINDINGS.md headings (anchors) that measured it


FINDINGS = "experiments/FINDINGS.md"     # where each recipe's figures are

RECIPES = {r.model: r for r in (
    # F(4x4) Winograd for the 3x3 convs.
    Recipe("vgg16", {"conv2d": "winograd"},
           ("winograd-for-3x3-convs",)),
    # The tile that fits each conv, two-vector tiles, trials by measured time, cold weights.
    Recipe("resnet152", {"conv2d": "winograd-fit", "design_space": "multi-vector",
                         "allocation": "measured", "runner_caches": "cold"},
           ("winograd-with-the-tile-that-fits", "two-vectors-of-channels",
            "trial-allocation-by-measured-time", "cold-weights-in-the-tuners-runner")),
    # Two-vector tiles.
    Recipe("mobilenetv2_100", {"design_space": "multi-vector"},
           ("two-vectors-of-channels",)),
    # Two-vector tiles, the classifier padded to whole pairs, trials by measured time.
    Recipe("squeezenet1_1", {"design_space": "multi-vector", "out_channels": "pad-pair",
                             "allocation": "measured"},
           ("two-vectors-of-channels", "conv-output-channels-padded-to-whole-vectors",
            "trial-allocation-by-measured-time")),
)}


def resolve(model: str, target, choice: str, wanted: dict, meta: dict, exists: bool,
            tunes: bool = True, layout: str | None = None) -> tuple[dict, dict | None]:
    """Every recipe option's value for this session, and the recipe record (None: none).

    ``wanted``: the user's options (None where unset). A new database this session tunes
    takes the model's recipe for the unset ones (x86-64, NHWC ``layout`` or the default); a
    resumed one repeats its recipe's session options (``database.recipe_of``). The rest
    gets ``OPTIONS``' default."""
    out = dict(wanted)
    record = None
    applied: dict = {}
    if choice != "none" and exists:
        record = database.recipe_of(meta)
        applied = {k: v for k, v in ((record or {}).get("applied") or {}).items()
                   if k in SESSION_OPTIONS}
    elif choice != "none" and tunes and targets.x86_measured(target) and model in RECIPES:
        recipe = RECIPES[model]
        record = {"model": recipe.model, "applied": {},
                  "evidence": [f"{FINDINGS}#{a}" for a in ("model-recipes", *recipe.evidence)]}
        if layout and layout.upper() != "NHWC":
            record["not_applied"] = f"measured in NHWC only, not --layout {layout.upper()}"
        else:
            applied = {k: v for k, v in recipe.options.items() if wanted.get(k) is None}
            record["applied"] = applied
    for k, v in applied.items():
        if out.get(k) is None:
            out[k] = v
    for k, default in OPTIONS.items():
        if out.get(k) is None:
            out[k] = default
    return out, record


def describe(record: dict | None) -> str:
    """One line for the console: what the recipe set."""
    if not record:
        return "no recipe"
    if record.get("not_applied"):
        return f"{record['model']}'s recipe not applied: {record['not_applied']}"
    applied = record.get("applied") or {}
    flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in applied.items())
    return (f"{record['model']}'s recipe: {flags}" if flags
            else f"{record['model']}'s recipe: every option given")


def apply(args, model: str, target, db_dir) -> dict | None:
    """Set the model's recipe into ``args`` for options left unset (``resolve``) and say so
    on the console; returns its record (None: no recipe)."""
    import sys

    wanted = {k: getattr(args, k) for k in OPTIONS}
    values, record = resolve(model, target, args.recipe, wanted, database.read_db_meta(db_dir),
                             database.database_exists(db_dir), tunes=args.trials > 0,
                             layout=args.layout)
    for k, v in values.items():
        setattr(args, k, v)
    if record:
        print(f"[tune] {describe(record)} (--recipe none: the plain defaults)",
              file=sys.stderr, flush=True)
    return record
