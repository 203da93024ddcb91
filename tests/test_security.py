"""Security basics, checked on real files: a checkpoint that carries code is refused without
running it, archives cannot write outside their folder, no user string reaches a shell, and a
local fleet cluster listens on loopback only with no dashboard. (Executed cache artifacts are
hash-checked before loading: tests/test_cache_integrity.py.)"""
from __future__ import annotations

import ast
import io
import tarfile
from pathlib import Path

import pytest

from testlib import REPO, TINY, run_cli

SOURCES = [p for d in ("edgebench", "converters", "benchmarks", "jetson", "examples")
           for p in sorted((REPO / d).rglob("*.py"))]


class _Payload:
    """Unpickling this runs ``Path(marker).touch()``: what a hostile checkpoint would do."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.slow  # 9.3 s on the 2-core AVX2 VM (2026-11-26): a whole edgebench.full run
def test_a_checkpoint_carrying_code_is_refused_and_the_code_never_runs(tmp_path):
    import torch

    marker = tmp_path / "pwned"
    ckpt = tmp_path / "evil.pth"
    torch.save({"state_dict": {"w": torch.zeros(1)}, "extra": _Payload(str(marker))}, ckpt)
    res = run_cli("edgebench.full", "--models", TINY, "--variants", "pytorch", "--tasks",
                  "parity", "--weights", str(ckpt), "--out", str(tmp_path / "r"))
    assert res.returncode == 2, res.stderr[-2000:]
    assert "weights_only" in res.stderr and "Traceback" not in res.stderr
    assert not marker.exists()                      # the payload was never unpickled
    with pytest.raises(Exception):                  # and the loader the workers use refuses it
        torch.load(ckpt, weights_only=True)
    assert not marker.exists()


def test_every_torch_load_passes_weights_only_true():
    calls = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("torch.load", "load") \
                    and "torch" in ast.unparse(node.func):
                kw = {k.arg: k.value for k in node.keywords}
                calls.append((path.name, node.lineno,
                              isinstance(kw.get("weights_only"), ast.Constant)
                              and kw["weights_only"].value is True))
    assert calls, "no torch.load found: the scan is looking in the wrong place"
    assert all(ok for _, _, ok in calls), [c for c in calls if not c[2]]


def test_no_shell_is_ever_started_from_python():
    """No subprocess call with shell=True and no os.system/os.popen: arguments travel as
    argv lists, so a model name, path or option value is never parsed by a shell."""
    bad = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name in ("os.system", "os.popen", "subprocess.getoutput",
                        "subprocess.getstatusoutput", "commands.getoutput"):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} {name}")
            for k in node.keywords:
                if k.arg == "shell" and not (isinstance(k.value, ast.Constant) and not k.value.value):
                    bad.append(f"{path.relative_to(REPO)}:{node.lineno} shell=")
    assert len(SOURCES) > 50 and not bad, bad


def _tar(path: Path, members: list[tuple[str, bytes | None, str | None]]) -> Path:
    """A real .tar.gz: (name, file content) or (name, None, link target) for a symlink."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("member", [("../escaped.txt", b"x", None),
                                    ("/tmp/edgebench-abs-escape.txt", b"x", None),
                                    ("imagenetv2/link", None, "/etc/passwd"),
                                    ("imagenetv2/up", None, "../../outside")])
def test_an_archive_member_that_escapes_the_folder_refuses_the_whole_archive(tmp_path, member):
    from edgebench.data import archives
    from edgebench.data.sources import DataError

    dest = tmp_path / "data"
    dest.mkdir()
    arc = _tar(tmp_path / "a.tar.gz", [("imagenetv2/ok.txt", b"fine", None), member])
    with pytest.raises(DataError, match="refused, member") as e:
        archives.extract(arc, dest)
    assert member[0] in str(e.value)
    assert list(dest.iterdir()) == []                       # nothing at all was extracted
    assert not (tmp_path / "escaped.txt").exists()
    assert not Path("/tmp/edgebench-abs-escape.txt").exists()


def test_a_safe_archive_extracts(tmp_path):
    from edgebench.data import archives

    arc = _tar(tmp_path / "a.tar.gz", [("v2/0/a.txt", b"fine", None), ("v2/l", None, "0/a.txt")])
    archives.extract(arc, tmp_path / "d")
    assert (tmp_path / "d" / "v2" / "0" / "a.txt").read_bytes() == b"fine"
    assert (tmp_path / "d" / "v2" / "l").read_bytes() == b"fine"


def test_a_hostile_devkit_archive_is_refused_before_torchvision_extracts_it(tmp_path):
    """torchvision extracts the devkit with no path filter (after an md5 check): edgebench
    checks the members first."""
    from edgebench.data.sources import DataError, _devkit_wnids

    root = tmp_path / "val"
    root.mkdir()
    _tar(root / "ILSVRC2012_devkit_t12.tar.gz", [("../../escaped.txt", b"x", None)])
    with pytest.raises(DataError, match="refused"):
        _devkit_wnids(root)
    assert not (tmp_path.parent / "escaped.txt").exists()


@pytest.mark.slow   # 5 s: starts a Ray cluster
def test_a_local_fleet_cluster_listens_on_loopback_without_a_dashboard():
    pytest.importorskip("ray", reason="ray is not installed (pip install 'edgebench[fleet]')")
    import ray

    from edgebench.fleet import cluster

    try:
        cluster.connect(None, {"device:sec": 1})
        nodes = ray.nodes()
        assert nodes and all(n["NodeManagerAddress"] == "127.0.0.1" for n in nodes)
        ctx = ray.get_runtime_context()
        assert ctx.gcs_address.startswith("127.0.0.1:")
        assert not ray._private.worker.global_worker.node.address_info.get("webui_url")
        listening = _listening_addresses()
        assert listening and all(ip in ("127.0.0.1", "::1", "::ffff:127.0.0.1")
                                 for ip, _ in listening), listening
    finally:
        ray.shutdown()


def _listening_addresses() -> list[tuple[str, str]]:
    """(ip, process name) of every TCP socket listened on by this process's descendants."""
    import psutil

    procs = psutil.Process().children(recursive=True)
    names = {p.pid: p.name() for p in procs}
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        pytest.skip("listing other processes' sockets needs root")
    return [(c.laddr.ip, names[c.pid]) for c in conns
            if c.status == psutil.CONN_LISTEN and c.pid in names]
