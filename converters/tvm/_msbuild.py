"""MetaSchedule builder function for CPU targets, run in the builder's worker processes.

TVM's ``default_build`` imports ``tvm.s_tir.tensor_intrin`` (all tensor intrinsics, the CUDA
ones included) in every fresh worker: 17-25 s on this 2-core machine, and the LocalBuilder
starts fresh workers for every batch of candidates. Under load that exceeds the build
timeout, so whole batches fail with "LocalBuilder: Timeout" and their tasks keep naive
schedules. By the time a candidate reaches the builder its tensorized blocks (if any) are
already inlined, so the registration is not needed to build it.
"""


def build(mod, target, _params=None):
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=target)


def export_so(mod):
    """Export a candidate as a linked .so in the builder worker (both cores link in
    parallel) instead of TVM's default .tar, which the runner would then link one by one."""
    import os
    import tempfile

    path = os.path.join(tempfile.mkdtemp(prefix="edgebench-ms-"), "tvm_tmp_mod.so")
    mod.export_library(path)
    return path
