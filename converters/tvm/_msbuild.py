"""MetaSchedule builder function for CPU targets, run in the builder's worker processes.

TVM's ``default_build`` imports every tensor intrinsic in each fresh worker, which under load
exceeds the build timeout (experiments/FINDINGS.md#builder-workers-and-gather-kernels). A
candidate's tensorized blocks are already inlined when it is built, so this skips that.
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
