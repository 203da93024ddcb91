"""Bad input, swept across every command: each answers it with exit code 2 and one line on
stderr, ``<command>: error: <message>``, the message naming the option or file at fault;
never a traceback, and nothing written before the mistake was found (a run directory given
with --out keeps every byte: the whole work folder is compared before and after each case).

``CASES`` is the list (docs count it): (id, command module, argv, expected text in the
message). ``{W}`` is the work folder the module fixture fills with bad and good inputs;
``{TINY}`` the tiny test model. Each case fails before any model work; it runs in a process
of its own, forked from one interpreter that imported the heavy libraries once
(tests/forked_cli.py), so the sweep is a fork per case, not a start-up with its imports."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import REPO, TINY, make_image, run_cli

# The name each command gives itself in its messages.
PROGS = {
    "edgebench.full": "edgebench",
    "edgebench.parity": "edgebench parity",
    "edgebench.tune": "edgebench tune",
    "edgebench.fleet": "edgebench fleet",
    "edgebench.telemetry": "edgebench telemetry",
    "edgebench.report": "edgebench report",
    "edgebench.compare": "edgebench compare",
}

# Arguments every case of a command starts with, so that only the bad one is wrong (and a
# case that were not refused would write under {W}, which the snapshot would catch).
BASE = {
    "edgebench.full": ["--models", TINY, "--variants", "pytorch", "--tasks", "latency",
                       "--weights", "random", "--cache-dir", "{W}/new-cache"],
    "edgebench.parity": ["--models", TINY, "--variants", "pytorch", "--weights", "random",
                         "--cache-dir", "{W}/new-cache"],
    "edgebench.tune": ["--model", TINY, "--trials", "0", "--export", "{W}/new-export",
                       "--tuning-dir", "{W}/new-tuning", "--cache-dir", "{W}/new-cache"],
    "edgebench.fleet": [],
}
# ... and the run directory they would write, unless the case names its own (or --resume).
NEW_OUT = {"edgebench.full": "{W}/new-run", "edgebench.parity": "{W}/new-run",
           "edgebench.fleet": "{W}/new-fleet"}

F, P, T, FL = "edgebench.full", "edgebench.parity", "edgebench.tune", "edgebench.fleet"
TE, R, C = "edgebench.telemetry", "edgebench.report", "edgebench.compare"

CASES = [
    # ---- edgebench.full: unknown names and values
    ("full-unknown-model", F, ["--models", "resnet15"], "unknown model 'resnet15'"),
    ("full-unknown-variant", F, ["--variants", "onnxruntme"], "unknown variant 'onnxruntme'"),
    ("full-unknown-task", F, ["--tasks", "latncy"], "'latncy'"),
    ("full-unknown-profile", F, ["--profile", "fast"], "'fast'"),
    ("full-max-images-zero", F, ["--max-images", "0"], "--max-images 0"),
    ("full-max-images-negative", F, ["--max-images", "-3"], "--max-images -3"),
    ("full-cell-timeout-negative", F, ["--cell-timeout", "-1"], "--cell-timeout -1"),
    ("full-seed-negative", F, ["--seed", "-1"], "--seed -1"),
    ("full-parity-threshold-above-1", F, ["--parity-min-top1", "1.5"], "--parity-min-top1 1.5"),
    ("full-model-given-twice", F, ["--models", TINY, TINY], f"--models: {TINY} given twice"),
    # (the emulated Orin lane has the Jetson side: an unknown mode, a mode needing a reboot)
    ("full-power-modes-not-a-jetson", F, ["--power-modes", "MAXN,30W"],
     "--power-modes needs NVIDIA's nvpmodel"),
    ("full-python-missing-interpreter", F, ["--python", "pytorch=/nonexistent/python3"],
     "'/nonexistent/python3' is not an executable interpreter"),
    ("full-cell-memory-limit-too-small", F, ["--cell-memory-limit", "10"],
     "--cell-memory-limit 10"),
    # ---- paths of the wrong kind, missing, not writable
    ("full-tvm-artifact-without-manifest", F, ["--variants", "tvm", "--tvm-artifact", "{W}/empty"],
     "--tvm-artifact {W}/empty: {W}/empty holds no manifest.json, nor any folder with one"),
    ("full-data-missing", F, ["--data", "{W}/no-such-data"], "'{W}/no-such-data' does not exist"),
    ("full-data-is-a-file", F, ["--data", "{W}/afile.txt"], "'{W}/afile.txt' is not a folder"),
    ("full-data-empty-folder", F, ["--data", "{W}/empty"], "'{W}/empty' is an empty folder"),
    ("full-data-without-images", F, ["--data", "{W}/textdata"],
     "'{W}/textdata' holds no image files"),
    ("full-labels-too-few-lines", F, ["--data", "{W}/flat", "--labels", "{W}/labels-short.txt"],
     "--labels {W}/labels-short.txt: 1 lines"),
    ("full-labels-for-a-foldered-layout", F, ["--labels", "{W}/labels-short.txt"],
     "--labels {W}/labels-short.txt: for a flat folder of ILSVRC2012_val_"),
    ("full-out-is-a-file", F, ["--out", "{W}/afile.txt"], "--out {W}/afile.txt: exists and is not"),
    ("full-out-under-a-file", F, ["--out", "{W}/afile.txt/run"],
     "--out {W}/afile.txt/run: cannot create it"),
    ("full-out-not-writable", F, ["--out", "/sys/edgebench-bad-input/run"],
     "--out /sys/edgebench-bad-input/run"),
    ("full-cache-dir-under-a-file", F, ["--cache-dir", "{W}/afile.txt/cache"],
     "--cache-dir {W}/afile.txt/cache"),
    # ---- checkpoints that are not: all found before the run (torch.load(weights_only=True))
    ("full-weights-text-file", F, ["--weights", "{W}/notckpt.pth"],
     "--weights {W}/notckpt.pth: not a PyTorch checkpoint"),
    ("full-weights-truncated", F, ["--weights", "{W}/trunc.pth"],
     "--weights {W}/trunc.pth: not a PyTorch checkpoint"),
    ("full-weights-pickled-objects", F, ["--weights", "{W}/pickled.pth"], "weights_only=True"),
    ("full-weights-of-another-model", F, ["--weights", "{W}/other.pth"],
     f"--weights {{W}}/other.pth: not a checkpoint of {TINY}"),
    # ---- your own model: a factory, an ONNX file, a head of its own, your labelled images
    ("full-onnx-missing", F, ["--models", "{W}/nope.onnx"], "--models {W}/nope.onnx: no such ONNX file"),
    ("full-onnx-corrupt", F, ["--models", "{W}/corrupt.onnx"], "not a readable ONNX model"),
    ("full-onnx-two-inputs", F, ["--models", "{W}/two-inputs.onnx"], "2 inputs (a, b)"),
    ("full-onnx-int-input", F, ["--models", "{W}/int-input.onnx"], "input 'ids' is INT64"),
    ("full-onnx-input-size-fixed", F, ["--models", "{W}/tiny.onnx", "--input-size", "3x9x9"],
     "input is fixed at H 8 (given 9)"),
    ("full-onnx-num-classes", F, ["--models", "{W}/tiny.onnx", "--num-classes", "3"],
     "--num-classes 3: {W}/tiny.onnx is an ONNX file"),
    ("full-factory-import-fails", F, ["--models", "nosuchpkg.mod:build", "--model-path", "{W}"],
     "cannot import nosuchpkg.mod"),
    ("full-factory-not-a-module", F, ["--models", "badfactory:not_module", "--model-path", "{W}"],
     "returned a int, not a torch.nn.Module"),
    ("full-factory-rejects-input", F, ["--models", "badfactory:fixed32", "--model-path", "{W}"],
     "the model rejects input 1x3x224x224 (RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
    ("full-head-of-another-class-count", F, ["--weights", "{W}/head5.pth", "--num-classes", "7"],
     "its head has 5 classes, the model 7"),
    ("full-data-of-another-class-count", F, ["--weights", "{W}/head5.pth", "--num-classes", "5",
                                             "--data", "{W}/three-classes"],
     "the data has 3 classes, the model " + TINY + " 5"),
    ("full-labels-without-a-folder", F, ["--data", "{W}/three-classes", "--labels",
                                         "{W}/two-names.txt"], "no line for the class folder(s) cow"),
    ("full-input-size-malformed", F, ["--input-size", "3x224"], "--input-size 3x224: give CxHxW"),
    ("full-num-classes-zero", F, ["--num-classes", "0"], "--num-classes 0"),
    ("full-mean-per-channel", F, ["--mean", "0.5", "0.5"], "one value per input channel (3)"),
    # ---- run directories: an earlier run's records are never touched
    ("full-out-holds-results", F, ["--out", "{W}/prior"], "--out {W}/prior already holds results"),
    ("full-resume-without-out", F, ["--resume"], "--resume needs --out"),
    ("full-resume-bad-model", F, ["--resume", "--out", "{W}/prior", "--models", "resnet15"],
     "unknown model 'resnet15'"),
    ("full-resume-other-settings", F, ["--resume", "--out", "{W}/prior", "--profile", "paper"],
     "--profile paper differs from the run's --profile quick"),
    ("full-resume-garbage-records", F, ["--resume", "--out", "{W}/garbage"],
     "{W}/garbage/results.jsonl line 1: not a JSON record"),
    ("full-resume-no-run-json", F, ["--resume", "--out", "{W}/nometa"], "but no run.json"),
    ("full-resume-fleet-run", F, ["--resume", "--out", "{W}/fleetrun"], "a fleet run"),
    # ---- edgebench.parity (the same checks, its own name)
    ("parity-unknown-variant", P, ["--variants", "tensorrt"], "unknown variant 'tensorrt'"),
    ("parity-weights-truncated", P, ["--weights", "{W}/trunc.pth"], "--weights {W}/trunc.pth"),
    ("parity-resume-bad-run-json", P, ["--resume", "--out", "{W}/badmeta"],
     "--resume --out {W}/badmeta: run.json is unreadable"),
    # ---- edgebench.tune
    ("tune-unknown-model", T, ["--model", "resnet15"], "unknown model 'resnet15'"),
    ("tune-unknown-target", T, ["--target", "no-such-board"], "--target: unknown target"),
    ("tune-trials-negative", T, ["--trials", "-1"], "--trials -1"),
    ("tune-export-is-a-file", T, ["--export", "{W}/afile.txt"], "--export {W}/afile.txt"),
    ("tune-summary-under-a-file", T, ["--summary", "{W}/afile.txt/summary.json"],
     "--summary {W}/afile.txt"),
    ("tune-weights-text-file", T, ["--weights", "{W}/notckpt.pth"],
     "--weights {W}/notckpt.pth: not a PyTorch checkpoint"),
    ("tune-onnx-corrupt", T, ["--model", "{W}/corrupt.onnx"],
     "--model {W}/corrupt.onnx: not a readable ONNX model"),
    # ---- edgebench.fleet: config files
    ("fleet-config-missing", FL, ["--config", "{W}/no-such.toml"], "'{W}/no-such.toml' is not a file"),
    ("fleet-config-is-a-folder", FL, ["--config", "{W}/empty"], "'{W}/empty' is not a file"),
    ("fleet-config-garbage-toml", FL, ["--config", "{W}/cfg-garbage.toml"],
     "--config {W}/cfg-garbage.toml: cannot parse"),
    ("fleet-config-garbage-json", FL, ["--config", "{W}/cfg-garbage.json"],
     "--config {W}/cfg-garbage.json: cannot parse"),
    ("fleet-config-not-a-table", FL, ["--config", "{W}/cfg-list.json"],
     "--config {W}/cfg-list.json: the fleet config must be a table"),
    ("fleet-config-wrong-key", FL, ["--config", "{W}/cfg-keys.toml"], "unknown key 'modles'"),
    ("fleet-config-unknown-model", FL, ["--config", "{W}/cfg-model.toml"],
     "[devices.a]: unknown model 'resnet15'"),
    ("fleet-config-factory-not-found", FL, ["--config", "{W}/cfg-factory.toml"],
     "[devices.a]: nosuchpkg.mod:build: cannot find the module nosuchpkg.mod to ship"),
    ("fleet-device-wait-negative", FL, ["--config", "{W}/cfg-ok.toml", "--device-wait", "-1"],
     "--device-wait -1"),
    ("fleet-local-device-unknown", FL, ["--config", "{W}/cfg-ok.toml", "--local-device", "b"],
     "--local-device b: not a device of the config"),
    ("fleet-out-under-a-file", FL, ["--config", "{W}/cfg-ok.toml", "--out", "{W}/afile.txt/f"],
     "--out {W}/afile.txt/f: cannot create it"),
    ("fleet-resume-not-a-fleet-run", FL, ["--resume", "--out", "{W}/prior"],
     "--out {W}/prior: run.json is not a fleet run's"),
    # ---- edgebench.telemetry
    ("telemetry-unknown-command", TE, ["parse-tegra"], "invalid choice: 'parse-tegra'"),
    ("telemetry-file-missing", TE, ["parse-tegrastats", "{W}/no-such.log"],
     "parse-tegrastats {W}/no-such.log: cannot open it"),
    ("telemetry-file-is-a-folder", TE, ["parse-tegrastats", "{W}/empty"],
     "parse-tegrastats {W}/empty: cannot open it"),
    ("telemetry-samples-zero", TE, ["detect", "--samples", "0"], "--samples 0"),
    ("telemetry-interval-negative", TE, ["detect", "--interval", "-1"], "--interval -1"),
    # ---- edgebench.report
    ("report-run-missing", R, ["{W}/no-such-run"], "{W}/no-such-run: no such folder"),
    ("report-run-is-a-file", R, ["{W}/afile.txt"], "{W}/afile.txt: a file, not a run folder"),
    ("report-run-json-missing", R, ["{W}/nometa"], "{W}/nometa/run.json does not exist"),
    ("report-run-json-garbage", R, ["{W}/badmeta"], "{W}/badmeta/run.json: unreadable"),
    ("report-records-garbage", R, ["{W}/garbage"],
     "{W}/garbage/results.jsonl line 1: not a JSON record"),
    ("report-records-not-records", R, ["{W}/wrongrecs"],
     "{W}/wrongrecs/results.jsonl line 1: not a result record"),
    # ---- edgebench.compare
    ("compare-run-missing", C, ["{W}/prior", "{W}/no-such-run"], "{W}/no-such-run: no such run"),
    ("compare-records-garbage", C, ["{W}/prior", "{W}/garbage"],
     "{W}/garbage/results.jsonl line 1: not a JSON record"),
    ("compare-one-plain-run", C, ["{W}/prior"], "give two or more run directories"),
    ("compare-threshold-not-a-number", C, ["{W}/prior", "{W}/prior", "--threshold", "lots"],
     "--threshold 'lots'"),
    ("compare-runs-share-no-cell", C, ["{W}/prior", "{W}/other"], "share no cell"),
    ("compare-out-under-a-file", C, ["{W}/prior", "{W}/prior", "--out", "{W}/afile.txt/cmp"],
     "--out {W}/afile.txt/cmp: cannot create it"),
]


def _fill(text: str, work: Path) -> str:
    return text.replace("{W}", str(work))


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every folder (None) and file (its bytes) under ``root``."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def work(tmp_path_factory, cache_dir) -> Path:
    """Bad inputs of every kind, and one real earlier run (``prior``) to protect."""
    import torch

    from edgebench.models import build_model

    w = tmp_path_factory.mktemp("bad_input")
    prior = w / "prior"
    proc = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "--tasks",
                   "latency", "--weights", "random", "--out", str(prior),
                   "--cache-dir", str(cache_dir), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = (prior / "results.jsonl").read_text(encoding="utf-8")

    (w / "empty").mkdir()
    (w / "afile.txt").write_text("not a folder\n", encoding="utf-8")
    for name in ("a.txt", "b.txt"):
        (w / "textdata" / "n01440764").mkdir(parents=True, exist_ok=True)
        (w / "textdata" / "n01440764" / name).write_text("not an image\n", encoding="utf-8")
    for i in (1, 2):
        make_image(w / "flat" / f"ILSVRC2012_val_{i:08d}.JPEG", seed=i)
    (w / "labels-short.txt").write_text("n01440764\n", encoding="utf-8")          # 2 images, 1 label

    (w / "notckpt.pth").write_text("hello, not a checkpoint\n", encoding="utf-8")
    torch.save(build_model(TINY, "random-seed-0").state_dict(), w / "good.pth")
    data = (w / "good.pth").read_bytes()
    (w / "trunc.pth").write_bytes(data[: len(data) // 2])       # a copy cut off half way
    (w / "good.pth").unlink()
    torch.save({"state_dict": {"w": torch.zeros(2)}, "args": Path("x")},
               w / "pickled.pth")                                # needs weights_only=False
    torch.save({"fc.weight": torch.zeros(3, 3)}, w / "other.pth")

    def run_dir(name: str, results: str | None, run_json: str | None) -> None:
        d = w / name
        d.mkdir()
        if results is not None:
            (d / "results.jsonl").write_text(results, encoding="utf-8")
        if run_json is not None:
            (d / "run.json").write_text(run_json, encoding="utf-8")

    meta = (prior / "run.json").read_text(encoding="utf-8")
    run_dir("garbage", "this is not JSON\n{\"model\": \n", meta)
    run_dir("wrongrecs", json.dumps({"model": 1, "task": "latency"}) + "\n", meta)
    run_dir("nometa", records, None)
    run_dir("badmeta", records, "{ not json")
    run_dir("fleetrun", records, json.dumps({"kind": "fleet", "run_id": "f", "config": {}}))
    shutil.copytree(prior, w / "other")
    (w / "other" / "results.jsonl").write_text(records.replace(f'"{TINY}"', '"resnet18"'), encoding="utf-8")

    ok = f'models = ["{TINY}"]\nvariants = ["pytorch"]\ntasks = ["latency"]\nweights = "random"\n'
    (w / "cfg-ok.toml").write_text(ok + "[devices.a]\n", encoding="utf-8")
    (w / "cfg-garbage.toml").write_text("models = [\n", encoding="utf-8")
    (w / "cfg-garbage.json").write_text('{"models": [1,', encoding="utf-8")
    (w / "cfg-list.json").write_text("[1, 2]\n", encoding="utf-8")
    (w / "cfg-keys.toml").write_text(ok.replace("models", "modles") + "[devices.a]\n", encoding="utf-8")
    (w / "cfg-model.toml").write_text(ok.replace(TINY, "resnet15") + "[devices.a]\n", encoding="utf-8")
    (w / "cfg-factory.toml").write_text(ok.replace(TINY, "nosuchpkg.mod:build") + "[devices.a]\n",
                                        encoding="utf-8")
    _own_model_inputs(w)
    return w


def _own_model_inputs(w: Path) -> None:
    """Bad models of one's own: ONNX files (a real tiny classifier, corrupt, two inputs, an
    integer input), a factory module, a 5-class checkpoint of TINY, a 3-class image folder."""
    import onnx
    import torch
    from onnx import TensorProto, helper

    from edgebench.models import build_model

    def save(path: Path, nodes, inputs, outputs) -> None:
        graph = helper.make_graph(nodes, path.stem, inputs, outputs)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10), str(path))

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    save(w / "tiny.onnx", [helper.make_node("GlobalAveragePool", ["x"], ["p"]),
                           helper.make_node("Flatten", ["p"], ["y"])], [x], [y])
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 3])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n", 3])
    save(w / "two-inputs.onnx", [helper.make_node("Add", ["a", "b"], ["y"])], [a, b], [y])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["n", 3])
    save(w / "int-input.onnx", [helper.make_node("Cast", ["ids"], ["y"], to=TensorProto.FLOAT)],
         [ids], [y])
    (w / "corrupt.onnx").write_bytes((w / "tiny.onnx").read_bytes()[:40] + b"\x00garbage")
    (w / "badfactory.py").write_text(
        "import torch\n"
        "def not_module():\n    return 42\n"
        "def fixed32():\n    return torch.nn.Sequential(torch.nn.Flatten(), "
        "torch.nn.Linear(3 * 32 * 32, 5))\n", encoding="utf-8")
    torch.save(build_model(TINY, "random-seed-0", num_classes=5).state_dict(), w / "head5.pth")
    for i, name in enumerate(("cow", "fern", "mug")):
        make_image(w / "three-classes" / name / "a.png", seed=40 + i)
    (w / "two-names.txt").write_text("fern\nmug\n", encoding="utf-8")


@pytest.fixture(scope="module")
def forked():
    """The commands, each in a fork of one interpreter that imported torch, timm, ONNX
    Runtime and TVM once (tests/forked_cli.py): a case costs a fork, not a start-up."""
    import os

    from forked_cli import ForkedCli

    cli = ForkedCli(dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", COLUMNS="200"),
                    REPO)
    yield cli
    cli.close()


@pytest.mark.slow          # ~90 cases: the sweep is in the full suite (CI)
@pytest.mark.parametrize("case_id, module, argv, expected", CASES, ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_one_line(case_id, module, argv, expected, work, forked):
    args = [*BASE.get(module, []), *argv]
    if module in NEW_OUT and "--out" not in argv and "--resume" not in argv:
        args += ["--out", NEW_OUT[module]]
    args = [_fill(a, work) for a in args]
    prior_records = (work / "prior" / "results.jsonl").read_bytes()
    before = _snapshot(work)

    proc = forked.run(module, *args, timeout=180)

    prog, expected = PROGS[module], _fill(expected, work)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1, f"stderr is not one line:\n{proc.stderr[-3000:]}"
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    assert expected in lines[0], (expected, lines[0])
    # nothing written, nothing lost: an earlier run's records keep every byte
    assert (work / "prior" / "results.jsonl").read_bytes() == prior_records
    after = _snapshot(work)
    assert after.keys() == before.keys(), (sorted(after.keys() - before.keys()),
                                           sorted(before.keys() - after.keys()))
    changed = [k for k in before if before[k] != after[k]]
    assert not changed, changed


def test_cases_cover_every_command():
    assert {c[1] for c in CASES} == set(PROGS)
    assert len({c[0] for c in CASES}) == len(CASES)


# ------------------------------------------------------------------ docs/reliability.md
DOC = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
MARK_START, MARK_END = "<!-- bad-input-cases:start -->", "<!-- bad-input-cases:end -->"


def cases_markdown() -> str:
    """The bad-input section of docs/reliability.md, made from CASES (regenerate it with
    `python tests/test_bad_input.py`)."""
    from collections import Counter

    n = Counter(PROGS[c[1]] for c in CASES)
    lines = [f"{len(CASES)} bad inputs, each answered with exit 2 and one line naming it "
             "(`tests/test_bad_input.py::CASES`):", "",
             "| command | cases |", "|---|---|"]
    lines += [f"| `python -m {module}` | {n[prog]} |" for module, prog in PROGS.items()]
    lines += ["", "| case | command | answer contains |", "|---|---|---|"]
    for cid, module, _, expected in CASES:
        shown = expected.replace("{W}/", "").replace("|", "\\|")
        lines.append(f"| {cid} | `python -m {module}` | `{shown}` |")
    return "\n".join(lines)


def test_reliability_doc_lists_every_case():
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(MARK_START) + len(MARK_START):text.index(MARK_END)].strip()
    assert block == cases_markdown(), "docs/reliability.md is stale: python tests/test_bad_input.py"


if __name__ == "__main__":        # rewrite the generated section of docs/reliability.md
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(MARK_START, 1)
    DOC.write_text(head + MARK_START + "\n" + cases_markdown() + "\n" + MARK_END
                   + rest.split(MARK_END, 1)[1], encoding="utf-8")
    print(f"wrote {DOC}")


def test_a_bad_data_folder_is_said_before_timm_is_imported(tmp_path):
    """The input's cheap checks come before the model names: a name not torchvision's imports
    timm (5.4 s on the 2-core VM, ci-durations-2026-11-26 in
    experiments/FINDINGS.md#folded-experiments; a minute under QEMU),
    which a wrong --data need not wait for."""
    code = ("import sys\n"
            "from edgebench.cli import build_parser\n"
            "from edgebench.cli_checks import validate\n"
            "from edgebench.errors import UsageError\n"
            "args = build_parser().parse_args(['--models', 'mobilenetv2_100', '--data', sys.argv[1]])\n"
            "try:\n"
            "    validate(args)\n"
            "except UsageError as e:\n"
            "    print('error:', e)\n"
            "print('timm imported:', 'timm' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "no-such-folder")], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "error: --data" in r.stdout and "timm imported: False" in r.stdout, r.stdout
