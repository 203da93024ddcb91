"""The parity reference's cache: reference logits are reused only where the same code on the
same kind of machine computed them."""
from __future__ import annotations

from edgebench.models import make_spec
from testlib import TINY


def test_the_reference_logits_are_keyed_by_what_computed_them(monkeypatch):
    """The cached reference logits (every variant's parity is judged against them) are not
    reused after a torch upgrade, on another architecture sharing the cache folder, or for
    another reference variant; a thread count alone (rounding only) does not invalidate them."""
    import platform

    from edgebench.cell import Cell, ModelInputs, RunSettings
    from edgebench.parity_cell import reference_key

    spec = make_spec(TINY, "random-seed-0")
    run = RunSettings(run_id="t", profile="quick", prof={}, cache_dir="", options={},
                      device={})
    cell = Cell(TINY, "onnxruntime", "parity", run=run,
                inputs=ModelInputs(weights="random-seed-0", data_folder="/d/abc", parity_images=16))

    class Reference:
        def __init__(self, **versions):
            self.v = versions

        def versions(self):
            return self.v

    key = reference_key(cell, spec, Reference(torch="2.14.1", torch_threads=2))
    assert reference_key(cell, spec, Reference(torch="2.14.1", torch_threads=8)) == key
    assert reference_key(cell, spec, Reference(torch="2.15.0", torch_threads=2)) != key
    other = Cell(TINY, "onnxruntime", "parity", run=RunSettings(
        run_id="t", profile="quick", prof={}, cache_dir="", options={}, device={},
        reference_variant="other"), inputs=cell.inputs)
    assert reference_key(other, spec, Reference(torch="2.14.1", torch_threads=2)) != key
    arch = "aarch64" if platform.machine() != "aarch64" else "x86_64"
    monkeypatch.setattr(platform, "machine", lambda: arch)
    assert reference_key(cell, spec, Reference(torch="2.14.1", torch_threads=2)) != key
