"""The fleet runner on a real Ray cluster: three Ray nodes on loopback started with Ray's own
test utilities (a head without devices, and one node per device), the real CLI as a
subprocess, the real timm model test_efficientnet, real worker processes. One node is
killed mid-run, then a node carrying its device is added again and the run resumed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from edgebench import store
from edgebench.report_format import fmt as _f
from testlib import REPO, TINY, assert_records_valid, run_cli

# Ray must stay on loopback: without this it looks up the machine's outward address when a
# driver connects. Read once, when ray is first imported, so set before any import of it.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
LOOPBACK = "127.0.0.1"
SCHEMA = json.loads((REPO / "edgebench" / "schema" / "results.schema.json").read_text(encoding="utf-8"))
NO_RAY = "Ray is not installed (pip install 'edgebench[fleet]'): the fleet cluster test needs it"


def records(out: Path) -> list[dict]:
    return store.read(out / "results.jsonl")      # tolerates a line being written meanwhile


def _env() -> dict:
    return dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", COLUMNS="200",
                RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")


# ----------------------------------------------------------------------------- without Ray

@pytest.mark.slow  # 6.4 s on the 2-core AVX2 VM (2026-11-26)
def test_without_ray_exits_2_with_install_hint(tmp_path):
    fake = tmp_path / "hide" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray (hidden by the test)')\n", encoding="utf-8")
    cfg = tmp_path / "f.toml"
    cfg.write_text('models = ["test_efficientnet"]\n[devices.a]\n', encoding="utf-8")
    proc = run_cli("edgebench.fleet", "--config", str(cfg),
                   env={"PYTHONPATH": os.pathsep.join([str(fake.parent), str(REPO)])})
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'edgebench[fleet]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_explains_every_option():
    from edgebench.fleet.cli import build_parser

    proc = run_cli("edgebench.fleet", "--help")
    assert proc.returncode == 0, proc.stderr
    parser = build_parser()
    for action in parser._actions:
        assert action.help and len(action.help) > 20, action.option_strings
        for opt in action.option_strings:
            assert opt in proc.stdout
    for word in ("device:", "--resume", "device absent", "lost", "edgebench[fleet]"):
        assert word in proc.stdout


def test_single_machine_code_never_imports_ray():
    code = ("import sys, edgebench.cli as f, edgebench.runner, edgebench.report, edgebench.worker\n"
            "f.build_parser().parse_args([])\n"
            "import edgebench.fleet, edgebench.fleet.config, edgebench.fleet.report\n"
            "print('ray' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_config_defaults_overrides_and_mistakes():
    from edgebench.fleet.config import ConfigError, validate

    raw = {"models": [TINY], "tasks": ["latency"], "variants": ["pytorch"],
           "profile_settings": {"latency": {"min_s": 0.5}}, "options": {"torch_device": "cpu"},
           "devices": {"orin": {"variants": ["pytorch", "onnxruntime"],
                                "options": {"torch_device": "cuda"}, "resource": "device:orin-agx"},
                       "xeon": {}}}
    cfg = validate(raw)
    orin, xeon = cfg.devices["orin"], cfg.devices["xeon"]
    assert orin.resource == "device:orin-agx" and xeon.resource == "device:xeon"
    assert [(c.variant, c.task) for c in orin.cells] == [("pytorch", "latency"), ("onnxruntime", "latency")]
    assert orin.settings["options"]["torch_device"] == "cuda"
    assert xeon.settings["options"]["torch_device"] == "cpu"
    assert orin.settings["prof"]["latency"]["min_s"] == 0.5
    assert orin.settings["prof"]["latency"]["min_count"] == 20      # the rest of the profile kept
    plain = validate({"models": [TINY], "profile": "paper", "devices": {"a": {}}}).devices["a"]
    assert plain.settings["options"]["torch_device"] == "auto"      # decided on the device
    assert plain.settings["options"].get("profile", "paper") == "paper"
    assert plain.settings["prof"]["latency"]["min_count"] == 1000
    for bad, msg in [({"devices": {}}, "no devices"),
                     ({"models": [TINY], "devices": {"a": {"variantz": []}}}, "unknown key"),
                     ({"models": [TINY], "devices": {"a": {"variants": ["nope"]}}}, "unknown variant"),
                     ({"models": ["resnet5O"], "devices": {"a": {}}}, "unknown model"),
                     ({"models": [TINY], "devices": {"a b": {}}}, "device id"),
                     ({"models": [TINY], "profile_settings": {"latency": {"min_z": 1}},
                       "devices": {"a": {}}}, "profile_settings"),
                     ({"models": [TINY], "options": {"nope": 1}, "devices": {"a": {}}}, "variant option"),
                     ({"models": [TINY], "devices": {"a": {"resource": "r"}, "b": {"resource": "r"}}},
                      "share")]:
        with pytest.raises(ConfigError, match=msg):
            validate(bad)


# ----------------------------------------------------------------------------- with Ray

@pytest.fixture
def cluster():
    pytest.importorskip("ray", reason=NO_RAY)
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "node_ip_address": LOOPBACK, "include_dashboard": False})
    try:
        yield c
    finally:
        c.shutdown()


def _add_device(cluster, dev: str):
    return cluster.add_node(num_cpus=1, resources={f"device:{dev}": 1}, node_ip_address=LOOPBACK)


def _wait_for(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _by_cell(recs):
    out: dict[tuple, list[dict]] = {}
    for r in recs:
        out.setdefault((r["device_id"], r["variant"], r["task"]), []).append(r)
    return out


@pytest.mark.slow
def test_fleet_two_devices_node_loss_and_resume(cluster, tmp_path):
    import torch

    cuda_here = torch.cuda.is_available()
    node_a, node_b = _add_device(cluster, "a"), _add_device(cluster, "b")
    assert node_a.node_ip_address == node_b.node_ip_address == LOOPBACK
    cfg = tmp_path / "fleet.toml"
    # max_s and budget_s are ceilings only: min_count and min_s end a window first on an idle
    # machine. In CI, beside the QEMU lane and another worker, 10 calls once took over 5 s and
    # the cell came out 'partial' (stop 42, 2nd run): right for the suite, but not what this
    # test is about.
    cfg.write_text(f"""
models = ["{TINY}"]
variants = ["pytorch", "onnxruntime"]
tasks = ["latency"]
weights = "random"
profile_settings = {{ idle_s = 0.2, latency = {{ warmup = 2, min_count = 10, min_s = 0.3, max_s = 60.0 }} }}

[devices.a]
cache_dir = "{tmp_path / 'cache-a'}"
tasks = ["latency", "throughput"]
profile_settings = {{ throughput = {{ max_batch = 4, warmup = 1, min_iters = 2, min_s = 0.2, budget_s = 60.0 }} }}

[devices.b]
cache_dir = "{tmp_path / 'cache-b'}"

[devices.c]   # no node carries device:c
cache_dir = "{tmp_path / 'cache-c'}"
""", encoding="utf-8")
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "edgebench.fleet", "--config", str(cfg), "--address",
           cluster.address, "--out", str(out), "--device-wait", "3"]
    log = open(tmp_path / "driver1.log", "w", encoding="utf-8")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_env(), cwd=REPO)
    try:
        # Kill b's node as soon as its first cell is in: its second cell is then running.
        _wait_for(lambda: any(r["device_id"] == "b" for r in records(out)) or proc.poll() is not None,
                  240, "device b's first record")
        assert proc.poll() is None, (tmp_path / "driver1.log").read_text(encoding="utf-8")[-3000:]
        cluster.remove_node(node_b)
        rc = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    text = (tmp_path / "driver1.log").read_text(encoding="utf-8")
    assert rc == 1, text[-3000:]                       # lost cells count as failed
    recs = records(out)
    assert_records_valid(recs)
    for r in recs:
        jsonschema.validate(r, SCHEMA)
        assert r["run_id"] == recs[0]["run_id"]
    cells = _by_cell(recs)
    assert set(cells) == {(d, v, "latency") for d in "abc" for v in ("pytorch", "onnxruntime")} | \
        {("a", v, "throughput") for v in ("pytorch", "onnxruntime")}
    # a: everything ran, on a's node, converted into a's own cache
    for (d, v, t), [r] in ((k, rs) for k, rs in cells.items() if k[0] == "a"):
        assert r["status"] == "ok", r
        assert r["fleet"]["node_id"] == node_a.node_id and r["fleet"]["resource"] == "device:a"
        assert r["profile"] == "quick" and r["weights"] == "random-seed-0+bn-recalibrated"
    assert cells[("a", "pytorch", "latency")][0]["n"] >= 10
    assert cells[("a", "onnxruntime", "latency")][0]["artifact"].startswith(str(tmp_path / "cache-a"))
    # BSR of a's ONNX Runtime sweep is against a's own PyTorch sweep
    pt = {b["batch_size"]: b for b in cells[("a", "pytorch", "throughput")][0]["by_batch"]}
    ort = cells[("a", "onnxruntime", "throughput")][0]["by_batch"]
    assert [b["batch_size"] for b in ort][:2] == [1, 2] and max(pt) <= 4
    both = [b for b in ort if b["batch_size"] in pt]
    assert both and all(b["bsr"] == pytest.approx(b["ase"] / pt[b["batch_size"]]["ase"], rel=1e-2)
                        for b in both)
    # b: its first cell was kept, the one that was running when the node died is failed
    [b_pt] = cells[("b", "pytorch", "latency")]
    assert b_pt["status"] == "ok" and b_pt["fleet"]["node_id"] == node_b.node_id, b_pt
    [b_ort] = cells[("b", "onnxruntime", "latency")]
    assert b_ort["status"] == "failed" and b_ort["reason"].startswith("device b lost: "), b_ort
    # c: absent, reported, not waited on
    for v in ("pytorch", "onnxruntime"):
        [r] = cells[("c", v, "latency")]
        assert r["status"] == "skipped" and r["reason"].startswith("device absent"), r
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["kind"] == "fleet" and run["config"]["devices"]["b"]["cache_dir"]
    assert {d: run["devices"][d]["status"] for d in "abc"} == {"a": "ok", "b": "lost", "c": "absent"}
    for d, node in (("a", node_a), ("b", node_b)):
        info = run["devices"][d]
        assert info["node"]["node_id"] == node.node_id
        assert info["machine"]["cores_physical"] >= 1 and info["machine"]["hostname"]
        assert info["variants"]["onnxruntime"]["ok"] and info["data"]["source"] == "sample"
        assert info["options"]["torch_device"] == ("cuda" if cuda_here else "cpu")
        # Ray sets OMP_NUM_THREADS=1 in its workers when the node has none: the agent undoes it
        # so cells use the device's threads as edgebench.full would.
        assert info["env_removed_from_ray_worker"] == \
            ([] if "OMP_NUM_THREADS" in os.environ else ["OMP_NUM_THREADS"])

    # Resume with a new node for b: only b's unfinished cell runs again (c is still absent).
    node_b2 = _add_device(cluster, "b")
    proc2 = subprocess.run([sys.executable, "-m", "edgebench.fleet", "--resume", "--out", str(out),
                            "--address", cluster.address, "--device-wait", "3"],
                           capture_output=True, text=True, env=_env(), cwd=REPO, timeout=300)
    assert proc2.returncode == 0, proc2.stderr[-3000:]       # skipped cells do not fail a run
    assert "device a: every cell already ok" in proc2.stderr
    recs2 = records(out)
    assert_records_valid(recs2)
    cells2 = _by_cell(recs2)
    assert recs2[:len(recs)] == recs                          # append-only: nothing rewritten
    new = recs2[len(recs):]
    assert {(r["device_id"], r["variant"]) for r in new} == {("b", "onnxruntime"), ("c", "pytorch"),
                                                             ("c", "onnxruntime")}
    assert cells2[("a", "pytorch", "latency")] == cells[("a", "pytorch", "latency")]
    assert cells2[("b", "pytorch", "latency")] == [b_pt]
    b_ort2 = cells2[("b", "onnxruntime", "latency")][-1]
    assert b_ort2["status"] == "ok" and b_ort2["fleet"]["node_id"] == node_b2.node_id != node_b.node_id
    assert b_ort2["run_id"] == b_pt["run_id"]
    assert b_ort2["weights"] == b_pt["weights"] == "random-seed-0+bn-recalibrated"
    run2 = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run2["devices"]["b"]["status"] == "ok" and len(run2["sessions"]) == 2
    assert run2["devices"]["b"]["node"]["node_id"] == node_b2.node_id

    # The report puts the devices side by side, speed-up against PyTorch on each device.
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Devices" in report and "| c | absent" in report
    head = next(ln for ln in report.splitlines() if ln.startswith("| model | variant | a: p50 ms"))
    assert "b: speed-up" in head
    ort_row = next(ln for ln in report.splitlines() if ln.startswith(f"| {TINY} | onnxruntime |"))
    assert ort_row.count("×") == 2                            # a speed-up on a and on b
    assert "BSR vs PyTorch on the same device" in report
    after = report.split("BSR vs PyTorch on the same device", 1)[1].splitlines()
    bsr_row = next(ln for ln in after if ln.startswith("| onnxruntime | a | "))
    assert f"| {_f(both[-1]['bsr'], 3)} |" in bsr_row
    assert (out / "devices" / "a" / "report.md").is_file() and (out / "devices" / "b" / "report.md").is_file()
    summary = (out / "summary.csv").read_text(encoding="utf-8").splitlines()
    assert {ln.split(",")[2] for ln in summary[1:]} == {"a", "b", "c"}


@pytest.mark.slow
def test_local_mode_starts_its_own_cluster(cluster, tmp_path):
    """Without --address the runner starts a one-node cluster on loopback for this machine,
    even while another cluster runs here (the fixture's), which it must not join."""
    cfg = tmp_path / "fleet.toml"
    cfg.write_text(f"""
models = ["{TINY}"]
variants = ["pytorch"]
tasks = ["convert"]
weights = "random"
cache_dir = "{tmp_path / 'cache'}"
[devices.here]
[devices.elsewhere]
""", encoding="utf-8")
    proc = run_cli("edgebench.fleet", "--config", str(cfg), "--out", str(tmp_path / "x"), env=_env())
    assert proc.returncode == 2 and "--local-device" in proc.stderr, proc.stderr[-2000:]
    out = tmp_path / "run"
    proc = run_cli("edgebench.fleet", "--config", str(cfg), "--local-device", "here",
                   "--device-wait", "0", "--out", str(out), env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {r["device_id"]: r for r in records(out)}
    assert_records_valid(out)
    assert recs["here"]["status"] == "ok" and recs["here"]["task"] == "convert", recs["here"]
    assert recs["here"]["fleet"]["node_ip"] == LOOPBACK
    assert recs["here"]["fleet"]["node_id"] not in {n.node_id for n in cluster.list_all_nodes()}
    assert recs["elsewhere"]["status"] == "skipped" and "device absent" in recs["elsewhere"]["reason"]
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["ray"]["address"] == "local" and run["ray"]["local_resources"] == {"device:here": 1.0}
    # python -m edgebench.report re-renders a fleet run as a fleet report, not a plain one.
    for p in (out / "report.md", out / "devices" / "here" / "report.md"):
        p.unlink()
    proc = run_cli("edgebench.report", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# edgebench fleet report")
    assert (out / "devices" / "here" / "report.md").is_file()


@pytest.mark.slow
def test_gpu_device_gets_a_parity_cell_for_pytorch(tmp_path):
    """A device whose PyTorch runs on a GPU (torch_device "cuda", as on a Jetson) gets a
    pytorch parity cell: the reference is CPU FP32, and cuDNN's TF32 default once put the
    GPU's PyTorch 0.008 off. The driver learns the device only at hello, so it adds the cell
    then. Here, without a GPU, the cell exists and is skipped with the reason."""
    pytest.importorskip("ray", reason=NO_RAY)
    import torch

    cfg = tmp_path / "fleet.toml"
    cfg.write_text(f"""
models = ["{TINY}"]
variants = ["pytorch"]
tasks = ["parity", "convert"]
weights = "random"
cache_dir = "{tmp_path / 'cache'}"
options = {{ torch_device = "cuda" }}
[devices.gpu]
""", encoding="utf-8")
    out = tmp_path / "run"
    proc = run_cli("edgebench.fleet", "--config", str(cfg), "--local-device", "gpu",
                   "--device-wait", "0", "--out", str(out), env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {r["task"]: r for r in records(out)}
    assert_records_valid(out)
    assert set(recs) == {"parity", "convert"}, recs
    if torch.cuda.is_available():
        assert recs["parity"]["status"] == "ok" and recs["parity"]["max_abs_diff"] <= 1e-3
    else:
        assert recs["parity"]["status"] == "skipped"
        assert "torch.cuda.is_available() is False" in recs["parity"]["reason"]
