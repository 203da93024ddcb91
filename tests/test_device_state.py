"""Device state: the sysfs/procfs readers and parsers (L4T, nvpmodel, cuDNN), device_state()
on a recreated Jetson tree and on this machine, sample_state(), clock warnings, the
``state`` CLI, and the study's reference figures that an AGX Orin's state unlocks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.reference import is_agx_orin, paper_figures
from edgebench.telemetry import device_state as ds
from edgebench.telemetry import sysfs

REPO = Path(__file__).resolve().parents[1]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")


# ------------------------------------------------------------------ device state

NV_TEGRA_RELEASE = {
    # lesomnus/tegra-exporter stats/parse_test.go and rbonghi/jetson_stats issue #711
    "# R36 (release), REVISION: 4.4, GCID: 41062509, BOARD: generic, EABI: aarch64, DATE: Mon Jun 16 16:07:13 UTC 2025": "36.4.4",
    "# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Fri Aug 22 00:55:42 UTC 2025": "38.2.0",
    "# R39 (release), REVISION: 2.0, GCID: 45755727, BOARD: generic, EABI: aarch64, DATE: Mon Jun  1 09:28:48 PM UTC 2026": "39.2.0",
}


def test_l4t_and_jetpack_parsing():
    for text, l4t in NV_TEGRA_RELEASE.items():
        assert sysfs.parse_l4t(text) == l4t
    assert sysfs.jetpack_for_l4t("36.4.4") == "6.2.1" and sysfs.jetpack_for_l4t("36.3.0") == "6.0"
    assert sysfs.parse_l4t("R32 something") is None
    assert sysfs.parse_nvpmodel("NV Power Mode: MAXN\n0\n") == {"name": "MAXN", "id": 0}
    assert sysfs.parse_nvpmodel("NVPM WARN: x\nNV Power Mode: MODE_30W\n2\n") == {"name": "MODE_30W", "id": 2}
    assert sysfs.parse_cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 3\n#define CUDNN_PATCHLEVEL 0\n") == "9.3.0"


def test_tensorrt_version_from_its_header_not_its_binding(tmp_path):
    """JetPack installs TensorRT with apt; device state reads NvInferVersion.h (the form
    TensorRT 10 ships), importing no Python binding."""
    header = ("#define NV_TENSORRT_MAJOR 10 //!< TensorRT major version.\n"
              "#define NV_TENSORRT_MINOR 3 //!< TensorRT minor version.\n"
              "#define NV_TENSORRT_PATCH 0 //!< TensorRT patch version.\n"
              "#define NV_TENSORRT_BUILD 30 //!< TensorRT build number.\n")
    assert sysfs.parse_nvinfer_header(header) == "10.3.0"
    assert sysfs.parse_nvinfer_header("#define NV_TENSORRT_MAJOR 10\n") is None
    _write(tmp_path / "usr/include/aarch64-linux-gnu/NvInferVersion.h", header)
    assert sysfs.nvinfer_version(str(tmp_path)) == "10.3.0"
    assert sysfs.nvinfer_version(str(tmp_path / "nothing")) is None


def test_sysfs_file_readers(tmp_path):
    _write(tmp_path / "sys/a", "32760 ma\n")
    _write(tmp_path / "sys/model", "NVIDIA Jetson\x00")
    _write(tmp_path / "sys/empty", "")
    assert sysfs.read_int("/sys/a", str(tmp_path)) == 32760            # under a root
    assert sysfs.read_float(str(tmp_path / "sys/a")) == 32760.0        # a path as it is
    assert sysfs.read_text("/sys/model", str(tmp_path)) == "NVIDIA Jetson"
    with pytest.raises(ValueError):
        sysfs.read_int(str(tmp_path / "sys/empty"))


def make_jetson_root(root: Path, locked: bool) -> Path:
    _write(root / "etc/nv_tegra_release", next(iter(NV_TEGRA_RELEASE)))
    (root / "proc/device-tree").mkdir(parents=True)
    (root / "proc/device-tree/model").write_bytes(b"NVIDIA Jetson AGX Orin Developer Kit\x00")
    (root / "proc/device-tree/compatible").write_bytes(
        b"nvidia,p3737-0000+p3701-0005\x00nvidia,p3701-0005\x00nvidia,tegra234\x00")
    _write(root / "proc/meminfo", "MemTotal:       64335836 kB\nMemFree:        50000000 kB\n"
                                  "Buffers:          100000 kB\nCached:          2000000 kB\n"
                                  "NvMapMemUsed:     512000 kB")
    _write(root / "usr/local/cuda/version.json", json.dumps({"cuda": {"version": "12.6.68"}}))
    for pol in ("policy0", "policy4", "policy8"):
        d = root / "sys/devices/system/cpu/cpufreq" / pol
        _write(d / "scaling_governor", "schedutil")
        _write(d / "scaling_min_freq", "2201600" if locked else "115200")
        _write(d / "scaling_max_freq", "2201600")
        _write(d / "cpuinfo_max_freq", "2201600")
        _write(d / "scaling_cur_freq", "2201600")
    for cpu in range(3):
        _write(root / f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq", "2201600")
    g = root / "sys/class/devfreq/17000000.gpu"
    _write(g / "min_freq", "1300500000" if locked else "306000000")
    _write(g / "max_freq", "1300500000")
    _write(g / "cur_freq", "1300500000")
    _write(g / "governor", "nvhost_podgov")
    for i, (name, temp) in enumerate([("cpu-thermal", 52562), ("gpu-thermal", 48437),
                                      ("cv0-thermal", -256000)]):
        z = root / f"sys/class/thermal/thermal_zone{i}"
        _write(z / "type", name)
        _write(z / "temp", str(temp))
        _write(z / "trip_point_0_type", "passive")
        _write(z / "trip_point_0_temp", "99000")
    return root


def _no_commands(cmd):
    raise FileNotFoundError(f"{cmd[0]} not found on PATH")


def test_device_state_on_a_recreated_jetson_tree(tmp_path):
    root = make_jetson_root(tmp_path, locked=False)
    st = ds.device_state(str(root), run=_no_commands)
    assert st["kind"] == "jetson"
    assert st["board_model"] == "NVIDIA Jetson AGX Orin Developer Kit"
    assert st["soc"] == "nvidia,tegra234" and st["l4t"] == "36.4.4" and st["jetpack"] == "6.2.1"
    assert st["cuda"] == "12.6.68"
    assert st["nvpmodel"] is None and "nvpmodel" in st["unavailable"]["nvpmodel"]
    assert st["jetson_clocks"] == "off" and st["gpu_devfreq"]["max_mhz"] == pytest.approx(1300.5)
    assert st["thermal_trips_c"]["cpu-thermal"] == 99.0
    assert is_agx_orin(st)
    assert all(k in st["unavailable"] for k, v in st.items() if v is None)
    sample = ds.sample_state(str(root))
    assert sample["temps_c"] == {"cpu-thermal": 52.562, "gpu-thermal": 48.437}  # -256 dropped
    assert sample["gpu_mhz"] == pytest.approx(1300.5)
    assert sample["cpu_mhz"]["max"] == pytest.approx(2201.6)
    assert ds.nvmap_used_mb(str(root)) == pytest.approx(500.0)
    locked = ds.device_state(str(make_jetson_root(tmp_path / "locked", locked=True)), run=_no_commands)
    assert locked["jetson_clocks"] == "on"


def test_device_state_here_never_raises_and_gives_reasons():
    st = ds.device_state()
    from edgebench.telemetry.sysfs import is_jetson

    assert st["kind"] == ("jetson" if is_jetson() else "linux"), st["kind"]
    assert st["cpu_count"] == os.cpu_count()
    for key, value in st.items():
        if value is None:
            assert key in st["unavailable"], f"{key} is None without a reason"


def test_a_machine_without_the_cuda_toolkit_says_where_it_looked(tmp_path):
    """A GPU server with only the driver and pip's CUDA libraries (the H100 runs) has no
    /usr/local/cuda: the reason says so and points at the driver's version instead."""
    from edgebench.telemetry.nvml import cuda_version_str

    st = ds.device_state(str(tmp_path), run=_no_commands)
    assert st["cuda"] is None
    assert "/usr/local/cuda" in st["unavailable"]["cuda"]
    assert "cuda_driver" in st["unavailable"]["cuda"]
    # NVML's integer (nvmlSystemGetCudaDriverVersion): major * 1000 + minor * 10
    assert [cuda_version_str(v) for v in (13000, 12060, 12020)] == ["13.0", "12.6", "12.2"]


def test_clock_warnings():
    jetson = {"kind": "jetson", "nvpmodel": {"name": "MODE_30W", "id": 2}, "jetson_clocks": "off"}
    w = ds.clock_warnings(jetson, [])
    assert len(w) == 2 and "not MAXN" in w[0] and "not locked" in w[1]
    good = {"kind": "jetson", "nvpmodel": {"name": "MAXN", "id": 0}, "jetson_clocks": "on",
            "gpu_devfreq": {"max_mhz": 1300.5}, "cpu_policies": [{"max_khz": 2201600}],
            "thermal_trips_c": {"cpu-thermal": 99.0}}
    steady = [{"gpu_mhz": 1300.5, "cpu_mhz": {"min": 2201.6}, "temps_c": {"cpu-thermal": 60.0}}] * 3
    assert ds.clock_warnings(good, steady) == []
    throttled = steady + [{"gpu_mhz": 900.0, "cpu_mhz": {"min": 1500.0}, "temps_c": {"cpu-thermal": 96.5}}]
    w = ds.clock_warnings(good, throttled)
    assert any("GPU clock varied" in x for x in w)
    assert any("GPU clock fell to 900" in x for x in w)
    assert any("CPU clock fell to 1500" in x for x in w)
    assert any("cpu-thermal reached 96.5" in x for x in w)
    assert ds.clock_warnings({"kind": "linux", "cpu_governors": ["powersave"]}, []) == [
        "CPU frequency governor is powersave, not performance: clocks may change during timing"]


# ------------------------------------------------------------------ reference figures

def test_paper_figures():
    rows = paper_figures("resnet152", "tensorrt-fp16")
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["latency_per_sample"]["value"] == 2.28
    assert by_metric["power"]["value"] == 28.30 and by_metric["power"]["unit"] == "W"
    assert by_metric["system_memory"]["low"] == 14.0 and by_metric["system_memory"]["model"] == "*"
    ort = {r["metric"]: r for r in paper_figures("resnet152", "onnxruntime")}
    assert ort["latency_per_sample"]["bound"] == "lower"        # "over 280 ms"
    assert paper_figures("squeezenet1_1", "pytorch", "latency_per_sample")[0]["bound"] == "upper"
    assert paper_figures("squeezenet1_1", "tvm", "failure")[0]["value"] is None
    assert paper_figures("nonexistent_model", "tensorrt-fp16") == [
        r for r in paper_figures("nonexistent_model", "tensorrt-fp16") if r["model"] == "*"]
    assert not is_agx_orin({"board_model": "NVIDIA Jetson Orin Nano Developer Kit"})
    assert not is_agx_orin(None)


def test_reference_copy_matches_shared():
    shared = REPO.parent / "shared" / "reference" / "orin-paper-2025.csv"
    if not shared.is_file():
        pytest.skip("../shared not present")
    assert (REPO / "edgebench/reference_data/orin-paper-2025.csv").read_bytes() == shared.read_bytes()


# ------------------------------------------------------------------ CLI

def test_state_cli_prints_state_sample_and_warnings():
    p = subprocess.run([sys.executable, "-m", "edgebench.telemetry", "state"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"device_state", "sample_state", "warnings"}
    assert out["device_state"]["cpu_count"] == os.cpu_count()
    assert "temps_c" in out["sample_state"] and isinstance(out["warnings"], list)
