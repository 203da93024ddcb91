"""The plan's order: the reference variant first (its sweep is the BSR baseline), parity
before a variant's other tasks, and a reference parity cell only when it runs off the CPU."""
from __future__ import annotations

from edgebench import plan


def _cells(*args, **kw) -> list[tuple[str, str, str]]:
    return [(c.model, c.variant, c.task) for c in plan.build(*args, **kw)]


def test_reference_variant_runs_first_and_others_keep_their_order():
    cells = _cells(["m"], ["tvm", "onnxruntime", "pytorch", "jax"], ["latency"])
    assert [v for _, v, _ in cells] == ["pytorch", "tvm", "onnxruntime", "jax"]
    assert plan.REFERENCE_VARIANT == "pytorch"


def test_parity_before_the_other_tasks_whatever_the_order_asked():
    cells = _cells(["m"], ["onnxruntime"], ["throughput", "latency", "accuracy", "parity", "convert"])
    assert [t for _, _, t in cells] == ["convert", "parity", "accuracy", "latency", "throughput"]


def test_reference_has_no_parity_cell_on_the_cpu():
    cells = _cells(["m"], ["onnxruntime", "pytorch"], list(plan.TASKS))
    assert ("m", "pytorch", "parity") not in cells
    assert cells[:3] == [("m", "pytorch", t) for t in ("accuracy", "latency", "throughput")]
    assert ("m", "onnxruntime", "parity") in cells


def test_reference_gets_a_parity_cell_off_the_cpu():
    """The runner asks for it (reference_parity) when the reference variant computes off
    the CPU; the parity reference itself is always FP32 on the CPU."""
    cells = _cells(["m"], ["onnxruntime", "pytorch"], list(plan.TASKS), reference_parity=True)
    assert cells[0] == ("m", "pytorch", "parity")
    assert len(cells) == 8


def test_another_reference_variant_goes_first_and_skips_parity():
    cells = _cells(["m"], ["pytorch", "onnxruntime"], ["parity", "latency"], reference="onnxruntime")
    assert cells == [("m", "onnxruntime", "latency"), ("m", "pytorch", "parity"),
                     ("m", "pytorch", "latency")]


def test_models_outermost_and_every_cell_once():
    cells = _cells(["a", "b"], ["onnxruntime", "pytorch"], ["parity", "latency"])
    assert [m for m, _, _ in cells] == ["a"] * 3 + ["b"] * 3
    assert cells[:3] == [("a", "pytorch", "latency"), ("a", "onnxruntime", "parity"),
                         ("a", "onnxruntime", "latency")]
    assert len(set(cells)) == len(cells)


def test_cells_are_bare_and_slugged():
    c = plan.build(["m"], ["v"], ["latency"])[0]
    assert (c.model, c.variant, c.task, c.run, c.inputs) == ("m", "v", "latency", None, None)
    assert c.slug() == "m__v__latency"
