"""The emulated Orin lane's work (jetson/emulated/, tests/test_emulated_lane.py), run in the
background from the start of the test session.

The lane is 45 minutes of wall time in CI (2026-11-27), most of it one process under QEMU,
and it needs nothing from the other tests. Run in line, it added those minutes to CI's. So
conftest.py starts it here as soon as collection shows that the lane will run, and moves the
lane's tests to the end of the session: by then their work is done or nearly so, and they
wait for it and check what it wrote. The x86 tests run meanwhile.

The jobs run one after another, each on the one before it:
  setup  jetson/emulated/setup.sh (2 minutes from nothing, mostly downloads)
  item4  rpc.sh start; edgebench.tune on this host, 8 trials measured over RPC in the root,
         exported for jetson-agx-orin-cpu; rpc.sh stop
  item3  the suite inside the root on squeezenet1_1 (smoke profile): pytorch, onnxruntime,
         onnxruntime-int8 (ONNX Runtime's ARM INT8 kernels), jax, and tvm from item4's
         artifact loaded with TVM's runtime library alone (TVM_USE_RUNTIME_LIB=1); parity,
         latency and LoadGen's SingleStream (LoadGen compiled from its sdist for the root by
         setup.sh). Without item4's artifact (item4 not selected, or it failed), edgebench.tune
         first exports untuned TVM for jetson-agx-orin-cpu on this host, and item3 uses that.
  item32 jtop.sh start (jetson-stats' service in the root); a --power-modes MAXN,50W sweep
         with EDGEBENCH_POWER_SOURCE=jtop checked against ina3221-sysfs; a sweep whose second
         mode's switch fails (the nvpmodel stand-in's fault injection); a sweep stopped by
         SIGINT in its second mode; two refused inputs (a mode that needs a reboot, an
         unknown mode); jtop.sh stop
item4 runs before item3 so that one suite run in the root also loads the tuned artifact:
item4's own parity run in the root (146 s in CI, 2026-11-27) and item3's untuned export (38 s)
are then not needed.

Started nowhere else: without the lane, nothing runs. EDGEBENCH_EMULATED_JOBS=item32 (a
comma-separated list) runs setup and the jobs named, and the other jobs' tests skip: for
working on one item (a job that needs an earlier one's output finds it in .emulated from an
earlier lane, or makes it: item32 converts squeezenet1_1 where item3 has not).

The jobs run in a process of their own (``python tests/emulated_jobs.py FOLDER OWNER_PID``),
one per test session, and write each job's outcome to FOLDER/<job>.json as it ends; a test
waits for its job's file. So the lane serves a session split over pytest-xdist's workers
(each worker collects the lane's tests, the first to claim FOLDER/runner.pid starts it, and
the lane's tests may run in any worker), and it ends when the session's main process (xdist's
controller) ends it, or dies."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EMU = REPO / "jetson" / "emulated"
LANE_ENV = "EDGEBENCH_EMULATED_LANE"
MODEL = "squeezenet1_1"
RPC_PORT = int(os.environ.get("EDGEBENCH_EMULATED_RPC_PORT", "9190"))
# Parity on one image of the bundled sample (1000 logits compared): every variant then runs
# the batch size it was converted for (TVM's exported library holds batch 1 alone). At the
# sample's 16 images parity runs at batch 8, for what the exact command
# (experiments/emulated-orin/run.sh) shows already.
ONE_IMAGE = ("--data", str(REPO / "datasets" / "sample"), "--max-images", "1")


@dataclass
class Step:
    """One command of a job, as it ended."""
    cmd: list[str]
    returncode: int | None = None        # None: timed out, or stopped with the session
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0

    def show(self) -> str:
        return (f"$ {' '.join(self.cmd)}  -> {self.returncode} ({self.wall_s:.0f} s)\n"
                f"{self.stdout[-3000:]}\n{self.stderr[-6000:]}")


@dataclass
class Job:
    name: str
    steps: list[Step] = field(default_factory=list)
    skipped: str = ""                     # why it did not run (the job before it failed)

    def to_json(self) -> dict:
        return {"name": self.name, "skipped": self.skipped,
                "steps": [dataclasses.asdict(step) for step in self.steps]}

    @classmethod
    def from_json(cls, d: dict) -> Job:
        return cls(d["name"], [Step(**step) for step in d["steps"]], skipped=d["skipped"])


JOBS = ("setup", "item4", "item3", "item32")     # the order they run in
# item4's candidates measured over RPC in the root: enough to show measurement, records and
# the export work (32 took 255 s alone and 403 s in CI beside the workers, on the lane's
# critical path).
RPC_TRIALS = 8
JOBS_ENV = "EDGEBENCH_EMULATED_JOBS"
NOT_SELECTED = f"not selected ({JOBS_ENV})"


def selected_jobs() -> set[str]:
    """The jobs to run: all, or setup and those named in EDGEBENCH_EMULATED_JOBS."""
    named = {n.strip() for n in os.environ.get(JOBS_ENV, "").split(",") if n.strip()}
    unknown = named - set(JOBS)
    if unknown:
        raise ValueError(f"{JOBS_ENV}: no job {', '.join(sorted(unknown))} (jobs: {', '.join(JOBS)})")
    return set(JOBS) if not named else named | {"setup"}
DIR_ENV = "EDGEBENCH_EMULATED_LANE_DIR"      # the session's lane folder, for xdist's workers
OWNER_ENV = "EDGEBENCH_EMULATED_LANE_OWNER"  # the session's main process: the lane ends with it


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)                       # whole or absent for a reader polling it


class LaneClient:
    """The lane as a test sees it, from any process of the session: its folder, and each
    job's outcome once the runner has written it."""

    def __init__(self, folder: Path):
        self.folder = folder

    @property
    def artifact(self) -> Path:
        """item4's: tuned over RPC, exported for the Orin's CPU."""
        return self.folder / "orin-cpu"

    @property
    def untuned_artifact(self) -> Path:
        """item3's where item4 left no artifact: untuned, cross-compiled here for the Orin's CPU."""
        return self.folder / "orin-cpu-untuned"

    def tuned_artifact_ready(self) -> bool:
        """Whether item4 tuned and exported its artifact (what item3 then loads)."""
        return (self.artifact / "manifest.json").is_file() and self.tune_summary.is_file()

    @property
    def tune_summary(self) -> Path:
        return self.folder / "tune.json"

    def wait(self, name: str) -> Job:
        """The job, once it has ended (each step is bounded by its own timeout), or a job
        skipped with the reason where the runner ended without writing it."""
        path = self.folder / f"{name}.json"
        while not path.is_file():
            if not _runner_alive(self.folder):
                if path.is_file():         # written just before it exited
                    break
                log = self.folder / "runner.log"
                tail = log.read_text(errors="replace")[-3000:] if log.is_file() else ""
                return Job.from_json({"name": name, "steps": [], "skipped":
                                      f"the lane's runner ended before this job did:\n{tail}"})
            time.sleep(2)
        return Job.from_json(json.loads(path.read_text(encoding="utf-8")))


def _runner_pid(folder: Path) -> int | None:
    try:
        return int((folder / "runner.pid").read_text())
    except (OSError, ValueError):
        return None


def _runner_alive(folder: Path) -> bool:
    pid = _runner_pid(folder)
    if pid is None:                          # claimed, pid not written yet
        return (folder / "runner.pid").exists()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):      # a zombie (ours, not yet reaped) has ended too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    return True


class Lane(LaneClient):
    """The lane's jobs, run in this process (the runner: ``main``)."""

    def __init__(self, folder: Path):
        super().__init__(folder)
        self.jobs = {name: Job(name) for name in JOBS}
        self._proc: subprocess.Popen | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run_all, name="emulated-lane", daemon=True)

    # -------------------------------------------------------------- what the jobs run
    def _item3(self) -> None:
        # TVM's library is built on this host for the Orin's CPU, as DESIGN has it (built on a
        # workstation, loaded on the board): compiled inside the root it took 280 s of QEMU
        # alone and three times that beside the other tests' workers, which ran item3 past
        # its limit in CI (2026-11-26). item4's tuned export where it made one, loaded with
        # TVM's runtime library alone, as a board without TVM's compiler would; else an
        # untuned export made now (40 s).
        if self.tuned_artifact_ready():
            artifact, env = self.artifact, {"TVM_USE_RUNTIME_LIB": "1"}
        else:
            artifact, env = self.untuned_artifact, {}
            if not self._step("item3", [
                    sys.executable, "-m", "edgebench.tune", "--model", MODEL,
                    "--target", "jetson-agx-orin-cpu", "--trials", "0",
                    "--tuning-dir", str(self.folder / "tuning-untuned"),
                    "--export", str(artifact), "--weights", "random", "--no-progress"],
                    timeout=600):
                return
        self._step("item3", [str(EMU / "run.sh"), "python", "-m", "edgebench.full",
                             "--models", MODEL, "--variants", "pytorch", "onnxruntime",
                             "onnxruntime-int8", "jax", "tvm", "--tasks", "parity", "latency",
                             "singlestream", "--tvm-artifact", str(artifact),
                             "--weights", "random", *ONE_IMAGE,
                             # smoke: every cell runs, with short windows (a latency window
                             # of quick's 15 s and 3 warm-ups took 35-85 s a cell under QEMU)
                             "--profile", "smoke",
                             # LoadGen (built from its sdist for the root): 4 queries, 1 s; a
                             # call takes 3-10 s under QEMU, so the profile's 10 s cap grows
                             # to fit the 4 queries (edgebench/mlperf/settings.py)
                             "--mlperf-min-queries", "4", "--mlperf-min-duration", "1",
                             # calibrated on 4 sample images the run does not evaluate
                             "--int8-calib-images", "4",
                             "--out", str(self.folder / "item3")], timeout=2400, env=env)

    def _full(self, *args: str) -> list[str]:
        """edgebench.full in the root on squeezenet1_1's ONNX Runtime latency (item3 left its
        ONNX file in the emulated Orin's cache)."""
        return [str(EMU / "run.sh"), "python", "-m", "edgebench.full", "--models", MODEL,
                "--variants", "onnxruntime", "--tasks", "latency", "--weights", "random",
                *ONE_IMAGE, *args]

    def _item32(self) -> None:
        jtop = str(EMU / "jtop.sh")
        out = self.folder / "item32"
        if not self._step("item32", ["bash", jtop, "start"], timeout=600):
            self._step("item32", ["bash", jtop, "stop"], timeout=120, always=True)
            return
        try:
            # A client stopped for longer than the service waits for it: jetson-stats' own
            # client reads no new sample after it, edgebench's source asks for them again.
            self._step("item32", [str(EMU / "run.sh"), "python", "tests/emulated_jtop_stall.py"],
                       timeout=300)
            power = {"EDGEBENCH_POWER_SOURCE": "jtop", "EDGEBENCH_POWER_CHECK": "ina3221-sysfs"}
            self._step("item32", self._full("--power-modes", "MAXN,50W", "--out", str(out / "sweep")),
                       timeout=900, env=power)
            # MAXN's switch fails once (the stand-in's fault injection): its cells fail with
            # nvpmodel's message and the board goes back to MAXN, where it was found.
            self._step("item32", self._full("--power-modes", "50W,MAXN", "--profile", "smoke",
                                              "--out", str(out / "fault")),
                       timeout=900, env={"EDGEBENCH_EMULATED_NVPMODEL_FAIL": "0",
                                         "EDGEBENCH_EMULATED_NVPMODEL_FAIL_ONCE": str(out / "failed-once")})
            self._interrupted("item32", self._full("--power-modes", "50W,MAXN", "--profile", "smoke",
                                                  "--out", str(out / "sigint")),
                              timeout=900)
            self._step("item32", self._full("--power-modes", "MAXN,30W,15W", "--out", str(out / "reboot")),
                       timeout=300)
            self._step("item32", self._full("--power-modes", "45W", "--out", str(out / "unknown")),
                       timeout=300)
        finally:
            self._step("item32", ["bash", jtop, "stop"], timeout=120, always=True)

    def _interrupted(self, job: str, cmd: list[str], timeout: float) -> None:
        """Run ``cmd`` and send it SIGINT (Ctrl-C) once the emulated board has switched to
        MODE_50W (nvpmodel's status file) and its cell has had 5 s to start."""
        status = REPO / ".emulated" / "root" / "var/lib/nvpmodel/status"
        step = Step(cmd + ["# SIGINT once in MODE_50W"])
        self.jobs[job].steps.append(step)
        t = time.monotonic()
        # A test session started in the background of a non-interactive shell (`pytest &`)
        # has SIGINT ignored, and children inherit that: the run would never see the
        # interrupt. Reset it to the default before exec'ing the command.
        cmd = [sys.executable, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, "
               "signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])", *cmd]
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True, text=True)
        self._proc = proc
        try:
            while proc.poll() is None and time.monotonic() - t < timeout:
                if status.is_file() and status.read_text().startswith("pmode:0003"):
                    time.sleep(5)
                    proc.send_signal(signal.SIGINT)    # run.sh exec'd into the Python itself
                    break
                time.sleep(0.5)
            step.stdout, step.stderr = proc.communicate(timeout=max(timeout - (time.monotonic() - t), 1))
            step.returncode = proc.returncode
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            step.stderr = f"timed out after {timeout:.0f} s\n"
        finally:
            self._proc = None
        step.wall_s = time.monotonic() - t
        step.stderr += f"\nboard afterwards: {status.read_text().strip() if status.is_file() else '?'}"

    def _item4(self) -> None:
        env = {"EDGEBENCH_EMULATED_RPC_PORT": str(RPC_PORT)}
        rpc = str(EMU / "rpc.sh")
        if not self._step("item4", ["bash", rpc, "start"], timeout=600, env=env):
            self._step("item4", ["bash", rpc, "stop"], timeout=120, env=env, always=True)
            return
        try:
            self._step("item4", [
                sys.executable, "-m", "edgebench.tune", "--model", MODEL,
                "--target", "jetson-agx-orin-cpu", "--rpc-tracker", f"127.0.0.1:{RPC_PORT}",
                "--rpc-key", "orin-emu", "--trials", str(RPC_TRIALS),
                "--tuning-dir", str(self.folder / "tuning"), "--export", str(self.artifact),
                "--weights", "random", "--no-progress", "--summary", str(self.tune_summary)],
                timeout=1200)
        finally:
            self._step("item4", ["bash", rpc, "stop"], timeout=120, env=env, always=True)
        # The artifact's parity in the root, with TVM's runtime alone: item3's run.

    # -------------------------------------------------------------- running them
    def _run_all(self) -> None:
        before = None
        chosen = selected_jobs()
        bodies = {"setup": self._setup, "item4": self._item4, "item3": self._item3,
                  "item32": self._item32}
        for name, body in ((n, bodies[n]) for n in JOBS):
            job = self.jobs[name]
            try:
                if self._stopping:
                    job.skipped = "the test session ended first"
                elif name not in chosen:
                    job.skipped = NOT_SELECTED
                elif before is not None:
                    job.skipped = before
                else:
                    body()
                    last = job.steps[-1] if job.steps else None
                    if name == "setup" and last and last.returncode != 0:
                        before = f"jetson/emulated/setup.sh exited {last.returncode}"
            except Exception as e:  # noqa: BLE001 - the lane's test reports it
                job.steps.append(Step(["(the lane's runner)"], None, "", repr(e)))
            finally:
                _write_json(self.folder / f"{name}.json", job.to_json())

    def _setup(self) -> None:
        self._step("setup", ["bash", str(EMU / "setup.sh")], timeout=1200)

    def _step(self, job: str, cmd: list[str], timeout: float, env: dict | None = None,
              always: bool = False) -> bool:
        """Run one command to its end or timeout; ``always``: even once the session ends
        (what stops the RPC tracker and server)."""
        step = Step(cmd)
        self.jobs[job].steps.append(step)
        if self._stopping and not always:
            step.stderr = "not run: the test session ended first"
            return False
        out = self.folder / f"{job}-{len(self.jobs[job].steps)}"
        t = time.monotonic()
        with open(f"{out}.out", "wb") as o, open(f"{out}.err", "wb") as e:
            self._proc = subprocess.Popen(cmd, cwd=REPO, stdout=o, stderr=e,
                                          stdin=subprocess.DEVNULL, start_new_session=True,
                                          env={**os.environ, **(env or {})})
            try:
                step.returncode = self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(self._proc)
                step.stderr = f"timed out after {timeout:.0f} s\n"
            finally:
                self._proc = None
        step.wall_s = time.monotonic() - t
        step.stdout = Path(f"{out}.out").read_text(errors="replace", encoding="utf-8")
        step.stderr += Path(f"{out}.err").read_text(errors="replace", encoding="utf-8")
        return step.returncode == 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End what still runs when the session ends (interrupted, or the lane deselected
        after collection), RPC tracker and server included."""
        self._stopping = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            _kill_group(proc)
        self._thread.join(timeout=180)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM first, so that rpc.sh and run.sh can stop what they started; then the
    suite's own SIGKILL of the group."""
    from edgebench.process import kill_group

    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        kill_group(proc)


def wanted() -> bool:
    return os.environ.get(LANE_ENV) == "1" and sys.platform == "linux"


def configure() -> None:
    """In the session's main process (xdist's controller), before any worker starts: a
    fresh folder for this session's lane (never one inherited from an outer session)."""
    if wanted() and not os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ[DIR_ENV] = tempfile.mkdtemp(prefix="edgebench-emulated-lane-")
        os.environ[OWNER_ENV] = str(os.getpid())


def start() -> LaneClient | None:
    """Start the session's lane once, whichever process asks first (a no-op without
    EDGEBENCH_EMULATED_LANE=1 on Linux); the lane as a test sees it."""
    if not wanted():
        return None
    selected_jobs()                          # a misspelt job: said here, before any work
    folder = Path(os.environ[DIR_ENV])       # made by configure(), the same in every worker
    try:                                     # the claim: one runner per session
        fd = os.open(folder / "runner.pid", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return LaneClient(folder)
    with open(folder / "runner.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), str(folder),
                                 os.environ[OWNER_ENV]],
                                cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    os.write(fd, str(proc.pid).encode())
    os.close(fd)
    return LaneClient(folder)


def stop() -> None:
    """In the session's main process at its end: stop what still runs (interrupted, or the
    lane deselected after collection), RPC tracker and server included, and wait for it."""
    if not wanted() or os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get(DIR_ENV):
        return
    folder = Path(os.environ[DIR_ENV])
    pid = _runner_pid(folder)
    if pid is None:                          # no lane this session: nothing to keep
        with contextlib.suppress(OSError):
            folder.rmdir()
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    t = time.monotonic()
    while _runner_alive(folder) and time.monotonic() - t < 200:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)      # ours when this process started it
        time.sleep(0.5)


def main(folder: Path, owner: int) -> None:
    """The runner: the jobs in order, until they end, SIGTERM, or the session's main process
    (``owner``) is gone."""
    lane = Lane(folder)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    lane.start()
    while lane._thread.is_alive() and not stopped.is_set():
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            break
        stopped.wait(2)
    if lane._thread.is_alive():
        lane.stop()
    for name, job in lane.jobs.items():     # never started: said in the job's file
        if not (folder / f"{name}.json").is_file():
            job.skipped = job.skipped or "the test session ended first"
            _write_json(folder / f"{name}.json", job.to_json())


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))            # edgebench.process, as in the session
    main(Path(sys.argv[1]), int(sys.argv[2]))
