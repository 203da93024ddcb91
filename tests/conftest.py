"""Shared fixtures (helpers live in testlib.py)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import emulated_jobs
from testlib import make_image


def pytest_collection_modifyitems(items):
    # The emulated Orin lane's tests go last: its work (45 minutes in CI, mostly under QEMU)
    # runs in the background from the start (emulated_jobs.py), beside the other tests, and
    # the lane's tests wait for it and check it.
    # A test that waits on the lane but is not marked would run early and sit on its
    # timeout while the lane still sets up (CI of 2026-11-25: 900 s, then a failure).
    unmarked = [item.nodeid for item in items if "lane" in getattr(item, "fixturenames", ())
                and not all(item.get_closest_marker(m) for m in ("emulated", "slow", "timeout"))]
    if unmarked:
        raise pytest.UsageError("tests that use the emulated lane need @pytest.mark.emulated, "
                                "slow and timeout(5400): " + ", ".join(unmarked))
    # Their whole file goes last. Under pytest-xdist that holds only without its reordering
    # of files by test count (on by default): in CI the lane's file is handed out mid-queue
    # and its worker waits on the lane (210 s), the CPU meanwhile busy with the lane and the
    # other worker. Handing it out last (--no-loadscope-reorder) measured no faster: 1668 s
    # against 1625 s, one clean-clone CI each (CONTRIBUTING.md#ci).
    lane_files = {item.path for item in items if item.get_closest_marker("emulated")}
    items.sort(key=lambda item: (item.path in lane_files, item.get_closest_marker("emulated") is not None))


# One inductor cache for the whole session, every xdist worker and every run's cache dir:
# each worker's session cache and each test's own cache dir otherwise compile the tiny model
# cold again (the converters put TORCHINDUCTOR_CACHE_DIR under the run's cache; a value the
# caller set wins, edgebench/__init__.py USER_ENV). Inductor's cache is safe between
# processes. A test about the cache itself sets its own (test_pytorch_compile.py).
_INDUCTOR_ENV = "TORCHINDUCTOR_CACHE_DIR"
_session_inductor: str | None = None


def pytest_configure(config):
    global _session_inductor
    emulated_jobs.configure()           # the session's main process only, before any worker
    if not os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get(_INDUCTOR_ENV):
        _session_inductor = tempfile.mkdtemp(prefix="edgebench-tests-inductor-")
        os.environ[_INDUCTOR_ENV] = _session_inductor      # workers inherit it


def pytest_unconfigure(config):
    if _session_inductor:
        shutil.rmtree(_session_inductor, ignore_errors=True)


def pytest_collection_finish(session):
    # Every xdist worker collects the lane's tests: the first to get here starts the lane.
    if any(item.get_closest_marker("emulated") for item in session.items):
        emulated_jobs.start()


def pytest_sessionfinish(session):
    emulated_jobs.stop()                # the session's main process only


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def wnid_folder(tmp_path_factory) -> Path:
    """ImageNet-val style class folders with 8 generated images over 4 classes."""
    root = tmp_path_factory.mktemp("imagenet_val")
    for i, wnid in enumerate(["n01440764", "n01443537", "n02123045", "n07920052"]):
        for j in range(2):
            make_image(root / wnid / f"ILSVRC2012_val_{i * 2 + j + 1:08d}.JPEG", seed=i * 10 + j)
    return root


@pytest.fixture
def small_disk(tmp_path):
    """A real, small filesystem: ``small_disk(size)`` mounts a tmpfs of that size (e.g.
    "4m") and returns its path; unmounted after the test. Needs root (CI runs as root)."""
    import os
    import subprocess

    mounts = []

    def make(size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("a real full disk needs a tmpfs mount, which needs root")
        where = tmp_path / f"disk{len(mounts)}"
        where.mkdir()
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
        mounts.append(where)
        return where

    yield make
    for where in reversed(mounts):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
