"""The emulated Orin lane's set-up (jetson/emulated/setup.sh), started in the background.

From nothing it takes about 2 minutes, most of it downloads (QEMU, the arm64 root, 424 MB of
aarch64 wheels). conftest.py starts it as soon as collection shows that the lane will run,
so it overlaps the tests before the lane; the lane's fixture waits for it (``finish``).
Started nowhere else: without the lane, nothing runs."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETUP = REPO / "jetson" / "emulated" / "setup.sh"
LANE_ENV = "EDGEBENCH_EMULATED_LANE"

_started: tuple[subprocess.Popen, Path, Path] | None = None


def wanted() -> bool:
    return os.environ.get(LANE_ENV) == "1" and sys.platform == "linux"


def start() -> None:
    global _started
    if _started is not None or not wanted():
        return
    folder = Path(tempfile.mkdtemp(prefix="edgebench-emulated-setup-"))
    out, err = folder / "stdout", folder / "stderr"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(["bash", str(SETUP)], cwd=REPO, stdout=o, stderr=e,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    _started = (proc, out, err)


def finish(timeout: float) -> subprocess.CompletedProcess:
    """setup.sh's outcome: the background run's (started here if it was not), as
    subprocess.run would return it."""
    start()
    if _started is None:
        raise RuntimeError(f"the emulated lane's set-up runs only with {LANE_ENV}=1 on Linux")
    proc, out, err = _started
    proc.wait(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.read_text(errors="replace"),
                                       err.read_text(errors="replace"))


def stop() -> None:
    """End a set-up still running when the session ends (interrupted, or the lane deselected
    after collection)."""
    if _started is not None and _started[0].poll() is None:
        _started[0].terminate()
        _started[0].wait(timeout=60)
