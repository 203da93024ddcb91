"""The lowering choices, in one registry: the conv layout (the core's) and the CPU rewrites
(``cpu.REWRITES``), each a ``relax_rewrite.Rewrite``. Which value a build or a tuning session
uses, the options that set them, the cache key's part and what tuning.json keeps are all
made here from the descriptors; ``passes.lower_for_tuning`` applies them."""
from __future__ import annotations

from . import database
from .cpu import REWRITES as CPU_REWRITES
from .relax_rewrite import Rewrite
from .targets import x86_measured

# NHWC on x86: every conv vectorises over channels (experiments/FINDINGS.md#nhwc-on-cpus).
LAYOUT = Rewrite("layout", ("NCHW", "NHWC"), plain="NCHW", measured="NHWC", before="NCHW",
                 help="the layout convs compute in", says="NHWC", nhwc_only=False)
REWRITES = (LAYOUT, *CPU_REWRITES)
BY_NAME = {r.name: r for r in REWRITES}
CHOICE_NAMES = tuple(BY_NAME)         # builds, exports, caches and records carry these keys
BEFORE_RECORDED = {r.name: r.before for r in REWRITES}


def recorded_choice(db_dir, key: str, wanted: str | None, before: str,
                    new: str | None) -> str | None:
    """A choice a database records (a lowering choice, or the runner's caches): ``wanted``,
    else what the database in ``db_dir`` records under ``key`` (its records exist only in
    that form), ``before`` for a database from before it was recorded, else ``new``."""
    if wanted:
        return wanted
    if db_dir is not None:
        recorded = database.read_db_meta(db_dir).get(key)
        if recorded:
            return str(recorded)
        if database.database_exists(db_dir):
            return before
    return new


def _normal(r: Rewrite, value: str | None) -> str | None:
    if not value:
        return None
    return value.upper() if r is LAYOUT else value.lower()


def lowering_for(target, db_dir=None, wanted: dict | None = None, **named) -> dict:
    """Every lowering choice of a build or tuning session: the user's (``wanted``), else the
    database's, else the x86-measured form on x86-64 CPUs and the plain one elsewhere.
    NHWC-only rewrites stay plain in NCHW builds."""
    wanted = {**(wanted or {}), **named}
    measured = x86_measured(target)
    out = {}
    for r in REWRITES:
        out[r.name] = recorded_choice(db_dir, r.name, _normal(r, wanted.get(r.name)), r.before,
                                      r.measured if measured else r.plain)
    if out["layout"] != "NHWC":
        for r in REWRITES:
            if r.nhwc_only:
                out[r.name] = r.plain
    return out


def check(choices: dict) -> None:
    """Raise ValueError for a value outside a choice's set, or one that needs NHWC in NCHW."""
    for r in REWRITES:
        v = choices.get(r.name, r.plain)
        if v not in r.choices:
            raise ValueError(f"tvm_{r.name} must be one of {', '.join(r.choices)} (got '{v}')")
        if r.needs_nhwc and v != r.plain and choices.get("layout") != "NHWC":
            raise ValueError(f"tvm_{r.name} {v} needs the NHWC layout (its TVM schedules are "
                             f"NHWC's; got {choices.get('layout')})")


def cache_tags(choices: dict) -> list[str]:
    """The compiled-library cache key's parts: the layout, and each rewrite not in its plain
    form (with the thresholds that decide what it rewrites)."""
    return [choices["layout"]] + [r.tag(choices[r.name]) for r in REWRITES[1:]
                                  if choices[r.name] != r.plain]


def add_options(group) -> None:
    """``--<name>`` for each choice (the tune command's), default None: the database's."""
    for r in REWRITES:
        group.add_argument(f"--{r.name.replace('_', '-')}", choices=list(r.choices),
                           default=None, help=r.help)


def measured_defaults() -> str:
    """The x86-measured defaults in words, for --help: "NHWC, padded channels, ..."."""
    return ", ".join(r.says for r in REWRITES if r.says and r.measured != r.plain)
