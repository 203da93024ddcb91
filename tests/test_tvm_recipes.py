"""TVM tuning recipes (converters/tvm/recipes.py): which options a new database of a study
model takes where the user names none, on which targets, and what a resumed one repeats;
then a real tuning session of SqueezeNet 1.1 (two of its tasks) that takes its recipe."""
from __future__ import annotations

import json

import pytest

tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")

from tvmlib import REPO, _cli, _records  # noqa: E402 - after the skip

UNSET = {"conv2d": None, "out_channels": None, "runner_caches": None, "design_space": None,
         "allocation": None}
DEFAULTS = {"conv2d": None, "out_channels": None, "runner_caches": None,
            "design_space": "auto", "allocation": "uniform"}


def _target(name):
    from converters.tvm import targets

    return targets.resolve_target(name)[0]


def _resolve(model, target="host", wanted=None, meta=None, exists=False, **kw):
    from converters.tvm.cpu import recipes

    return recipes.resolve(model, _target(target), kw.pop("choice", "auto"),
                           {**UNSET, **(wanted or {})}, meta or {}, exists, **kw)


def test_a_new_database_on_this_cpu_takes_its_models_recipe_for_the_unset_options():
    values, record = _resolve("resnet152")
    assert values == {"conv2d": "winograd-fit", "out_channels": None, "runner_caches": "cold",
                      "design_space": "multi-vector", "allocation": "measured"}
    assert record["model"] == "resnet152" and record["applied"] == {
        "conv2d": "winograd-fit", "design_space": "multi-vector", "allocation": "measured",
        "runner_caches": "cold"}
    # the evidence it names is a heading of the findings page (a renamed one fails here)
    from converters.tvm.cpu.recipes import RECIPES
    from test_docs_links import anchors

    have = anchors(REPO / "experiments" / "FINDINGS.md")
    assert record["evidence"][0] == "experiments/FINDINGS.md#model-recipes"
    assert all(e.split("#")[1] in have for e in record["evidence"]), record["evidence"]
    missing = [(r.model, e) for r in RECIPES.values() for e in r.evidence if e not in have]
    assert not missing and all(r.evidence for r in RECIPES.values()), missing
    # the user's option wins, and is not recorded as the recipe's
    values, record = _resolve("resnet152", wanted={"conv2d": "direct", "allocation": "uniform"})
    assert values["conv2d"] == "direct" and values["allocation"] == "uniform"
    assert values["design_space"] == "multi-vector"
    assert "conv2d" not in record["applied"] and "allocation" not in record["applied"]
    # a model without a recipe gets the plain defaults
    assert _resolve("efficientnet_b0") == (DEFAULTS, None)


def test_no_recipe_where_none_was_measured_or_asked_for():
    # the Orin's Arm cores and its GPU: never measured
    assert _resolve("vgg16", target="jetson-agx-orin-cpu") == (DEFAULTS, None)
    assert _resolve("vgg16", target="jetson-agx-orin") == (DEFAULTS, None)
    # --recipe none, and a session that tunes nothing (an untuned export)
    assert _resolve("vgg16", choice="none") == (DEFAULTS, None)
    assert _resolve("vgg16", tunes=False) == (DEFAULTS, None)
    # --layout NCHW: measured in NHWC only; the record says why it was not applied
    values, record = _resolve("vgg16", layout="nchw")
    assert values == DEFAULTS
    assert record["applied"] == {} and "NHWC" in record["not_applied"]


def test_a_resumed_database_repeats_its_recipes_search_options_only():
    from converters.tvm.cpu import recipes

    _, first = _resolve("resnet152")
    meta = {"sessions": [{"recipe": first, "conv2d": "winograd-fit"}]}
    values, record = _resolve("resnet152", meta=meta, exists=True)
    # how the search runs is repeated; the lowering and the runner's caches are the
    # database's own (passes.conv2d_for, runner.caches_for read them from tuning.json)
    assert values == {**DEFAULTS, "design_space": "multi-vector", "allocation": "measured"}
    assert record == first
    # a database tuned without a recipe (before recipes, or --recipe none) keeps the defaults
    assert _resolve("resnet152", meta={"sessions": [{"recipe": None}]},
                    exists=True) == (DEFAULTS, None)
    assert "resnet152's recipe: --conv2d winograd-fit" in recipes.describe(first)


def test_every_recipe_is_options_the_command_accepts():
    """A recipe's values must stay valid choices of edgebench.tune's options."""
    from converters.tvm import cli
    from converters.tvm.cpu import recipes

    for r in recipes.RECIPES.values():
        flags = [x for k, v in r.options.items() for x in (f"--{k.replace('_', '-')}", v)]
        args = cli.build_parser().parse_args(["--model", r.model, *flags])
        assert all(getattr(args, k) == v for k, v in r.options.items()), r
        assert set(r.options) <= set(recipes.OPTIONS), r


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tuning_squeezenet_takes_its_recipe_and_a_resumed_session_repeats_it(tmp_path):
    """edgebench.tune with no options on squeezenet1_1 (two of its tasks at 64x64): the
    session runs in the multi-vector space with measured allocation, its 1000-class conv
    padded to pairs of vectors; tuning.json and the run record's tuning block say so. The same
    command resumed repeats it; --recipe none gets the plain defaults."""
    from converters.tvm import database

    tasks = ["fused_conv2d16_", "fused_conv2d1_add1_"]

    def tune(root, trials, *extra):
        r = _cli("--model", "squeezenet1_1", "--input-size", "3x64x64", "--weights", "random",
                 "--tuning-dir", str(root), "--trials", str(trials), "--population", "64",
                 "--only-tasks", *tasks, "--no-progress", *extra)
        assert r.returncode == 0, r.stderr[-3000:]
        (db,) = root.glob("llvm-*/squeezenet1_1-3x64x64")
        return r.stderr, db, json.loads((db / "tuning.json").read_text(encoding="utf-8"))

    err, db, meta = tune(tmp_path / "auto", 4)
    assert "squeezenet1_1's recipe: --design-space multi-vector --out-channels pad-pair " \
           "--allocation measured" in err
    s = meta["sessions"][0]
    assert s["recipe"]["applied"] == {"design_space": "multi-vector",
                                      "out_channels": "pad-pair", "allocation": "measured"}
    assert s["out_channels"] == meta["out_channels"] == "pad-pair"
    assert s["allocation"]["rule"] == "measured"
    assert database.database_profile(db)[1] == "multi-vector"
    block = database.tuning_meta(db, {"tasks_tuned": 2, "trials": 4})
    assert block["recipe"] == {"model": "squeezenet1_1", "applied": s["recipe"]["applied"]}

    err, _, meta = tune(tmp_path / "auto", 6)
    again = meta["sessions"][1]
    assert again["trials_before"] == 4 and again["trials_run"] == 2
    assert again["allocation"]["rule"] == "measured" and again["recipe"] == s["recipe"]
    assert again["design_space"] and any(k == "multi-vector" for k in again["design_space"])
    assert len(_records(db)) == 6

    err, db, meta = tune(tmp_path / "none", 4, "--recipe", "none")
    s = meta["sessions"][0]
    assert "recipe" not in err and s["recipe"] is None
    assert s["allocation"]["rule"] == "uniform" and s["out_channels"] == "pad"
    assert database.database_profile(db)[1] == "wide-vector"
    assert database.tuning_meta(db, {"tasks_tuned": 2, "trials": 4})["recipe"] is None
