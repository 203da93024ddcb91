"""pytorch-compile (torch.compile, JIT): a real inductor compile of a small timm model."""
from __future__ import annotations

import numpy as np
import pytest

import converters
from edgebench.model_branch import graphs_compiled
from edgebench.models import make_spec
from testlib import TINY


@pytest.mark.slow
def test_the_compile_in_convert_is_the_graph_the_predictor_calls(tmp_path, monkeypatch):
    """convert compiles with a batch-1 call; the predictor's first batch-1 call must then run
    that graph, not trace and compile a second one. A batch built outside inference mode has
    another dispatch key set than the predictor's, and dynamo's guard on it recompiled every
    model at its first measured call (about 5 s for resnet152 on the 2-core machine:
    experiments/jit-first-call-recompile)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    conv = converters.get("pytorch-compile")
    spec = make_spec(TINY, "random-seed-0")
    art = conv.convert(spec, tmp_path)
    predictor = conv.load(art, spec)
    before = graphs_compiled()
    assert before is not None and before >= 1
    x = np.random.default_rng(0).standard_normal((1, *spec.input_size)).astype(np.float32)
    out = predictor(x)
    assert out.shape == (1, 1000)
    assert graphs_compiled() == before
    # and it computes what eager PyTorch computes
    ref = converters.get("pytorch").reference_predictor(spec)(x)
    assert np.abs(out - ref).max() <= 1e-3

