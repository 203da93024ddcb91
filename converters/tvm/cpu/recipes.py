"""Per-model tuning recipes: the options each study model's best CPU database was tuned with.

Issue 33 found, model by model, which tuning options beat the defaults on the x86 CPUs this
project measured: the AVX2 Zen 3 and the AVX-512 Zen 4 and Zen 5, for all four recipes. A
user who runs
``python -m edgebench.tune --model resnet152`` should get that, not the defaults. So a new
database on an x86-64 LLVM target takes its model's recipe for every option the user leaves
unset. It is recorded in ``tuning.json`` (each session's ``recipe``) and in every run record's
``tuning`` block. ``--recipe none`` tunes with the plain defaults.

Only options with a gain on every CPU they were measured on are in a recipe: where a choice helped on one
CPU and hurt on another (SqueezeNet 1.1's Winograd: 0.994x ORT's p50 on the Zen 5, 1.358x on
the Zen 3), the default stays. GPUs and the Orin's Arm cores were not measured, so they get
no recipe.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import database, targets

CHOICES = ("auto", "none")      # --recipe

# The options a recipe may set (TuneConfig / argparse names) and the plain default of each
# where neither the user nor a recipe sets it (None: the database's, else passes.py's).
OPTIONS = {"conv2d": None, "out_channels": None, "runner_caches": None,
           "design_space": "auto", "allocation": "uniform"}
# How a search is run, not what it tunes: a resumed session repeats its database's recipe
# for these. The others are the database's own (its workloads, or how its records were
# measured) and passes.py / runner.py read them from it.
SESSION_OPTIONS = ("design_space", "allocation")


@dataclass(frozen=True)
class Recipe:
    model: str
    options: dict
    evidence: tuple = field(default=())     # experiments/ folders that measured it


RECIPES = {r.model: r for r in (
    # F(4x4) Winograd for the 3x3 convs: 0.93x ORT's p50 on the Zen 3 (direct: 1.33x), 0.641x
    # on the Zen 4, 0.863x on the Zen 5.
    Recipe("vgg16", {"conv2d": "winograd"},
           ("tvm-winograd-2026-11-26", "tvm-six-models-zen4-2026-11-27",
            "tvm-six-models-zen5-2026-11-29")),
    # The tile that fits each conv, two-vector tiles, trials by measured time, candidates
    # measured with their weights flushed: 0.926x ORT's p50 on the Zen 5; on the Zen 3 0.802x
    # the kept direct database's network (1.101x ORT's p50, against 1.508x); on the Zen 4
    # 0.945-0.960x the kept one's network, 0.896-0.993x ORT's p50 (against 1.063x).
    Recipe("resnet152", {"conv2d": "winograd-fit", "design_space": "multi-vector",
                         "allocation": "measured", "runner_caches": "cold"},
           ("tvm-winograd-fit-zen5-2026-11-29", "tvm-recipes-zen3-2026-12-01",
            "tvm-recipes-zen4-2026-12-03")),
    # Two-vector tiles: 0.951x ORT's p50 on the Zen 5 (one vector: 1.036x); 0.977x the kept
    # one-vector database's network on the Zen 3, 0.982x on the Zen 4.
    Recipe("mobilenetv2_100", {"design_space": "multi-vector"},
           ("tvm-multi-vector-2026-11-29", "tvm-recipes-zen3-2026-12-01",
            "tvm-reuse-space-zen4-2026-12-03")),
    # Two-vector tiles, the 1000-class conv padded to whole pairs, trials by measured time,
    # direct convs: 1.026x ORT's p50 on the Zen 5 (defaults: 1.071x); on the Zen 3 0.889x the
    # kept database's network, 1.114x ORT's p50 (kept: 1.634x); on the Zen 4 0.906-0.978x the
    # kept one's network, 0.895-0.974x ORT's p50 (kept: 1.019x).
    Recipe("squeezenet1_1", {"design_space": "multi-vector", "out_channels": "pad-pair",
                             "allocation": "measured"},
           ("tvm-pool-schedule-2026-11-29", "tvm-zen3-squeezenet-direct-2026-12-02",
            "tvm-recipes-zen4-2026-12-03")),
)}


def resolve(model: str, target, choice: str, wanted: dict, meta: dict, exists: bool,
            tunes: bool = True, layout: str | None = None) -> tuple[dict, dict | None]:
    """Every recipe option's value for this session, and the recipe record (None: none).

    ``wanted``: the user's options (None where unset). A new database that this session
    tunes (``tunes``) takes the model's recipe for the unset ones, where one is known for
    this target and the layout is NHWC, the one they were measured in (``layout``: the
    user's, None for the default); a resumed one repeats the session options of the recipe
    it was tuned with (``database.recipe_of``), and reads the rest from itself as before. Whatever is
    still unset gets ``OPTIONS``' default."""
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
                  "evidence": [f"experiments/{e}/" for e in recipe.evidence]}
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
    """``edgebench.tune``'s options (``args``) with the model's recipe for those left unset
    (``resolve``), set in place; says on the console what it set. Returns its record (None:
    no recipe)."""
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
