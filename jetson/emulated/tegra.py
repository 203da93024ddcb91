#!/usr/bin/env python3
"""The recreated Jetson AGX Orin system of the emulated lane: run on the x86 host (natively,
standard library only) by setup.sh and run.sh. Nothing here runs inside the emulated root.

    tegra.py install ROOT     files a JetPack 6 AGX Orin has in its root filesystem:
                              /etc/nv_tegra_release (a recorded real file) and the stand-ins
                              /usr/sbin/nvpmodel, /usr/bin/jetson_clocks, /usr/bin/tegrastats
    tegra.py overlay ROOT     the board's /proc and /sys entries (OVERLAY below), rebuilt
    tegra.py rails ROOT       keeps the INA3221 readings following the root's CPU load,
                              until the process that started it has gone

Everything written here is a STAND-IN, labelled as one (OVERLAY/README, the stand-ins' own
headers), and the records say the device is emulated (edgebench/sysinfo.py finds that on its
own). What is real: the file layouts, which are the ones edgebench's readers
(edgebench/telemetry/{ina3221,sysfs,device_state}.py) and NVIDIA's tools use on a board.
What is not: every number in them (rails, clocks), which describe no hardware.

How a board's /proc and /sys entries get into a root whose /proc and /sys are the host's:
procfs cannot gain entries (no /proc/device-tree on x86) and /sys/bus/i2c does not exist on
this host, so the entries live in OVERLAY, a folder of the root, and run.sh gives it to QEMU
as its path prefix (QEMU_LD_PREFIX): QEMU's user-mode emulation opens /X as OVERLAY/X when
that exists, else /X (QEMU's util/path.c). Every process in the root runs under QEMU, so all
of them see the same files; the host's /proc and /sys serve everything else (processes,
memory, CPU topology). Symlinks inside OVERLAY are relative, as they are in sysfs, so they
resolve inside OVERLAY.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OVERLAY = "usr/share/edgebench-emulated/overlay"        # inside the root

# A recorded real /etc/nv_tegra_release: L4T R36.4.4 = JetPack 6.2.1 (tests/fixtures/jetson/
# README.md says where it was printed) and a recorded JetPack 6.2.1 AGX Orin tegrastats line,
# the template of the tegrastats stand-in.
NV_TEGRA_RELEASE = REPO / "tests/fixtures/jetson/nv_tegra_release.r36.4.4"
TEGRASTATS_LINE = REPO / "tests/fixtures/tegrastats/agx_orin_64gb_jetpack6.2.1_r36.4.4.txt"

# Device tree of an AGX Orin 64GB developer kit (P3701-0005 module on the P3737 carrier), as
# tests/test_device_state.py and jetson-stats know it.
MODEL = "NVIDIA Jetson AGX Orin Developer Kit"
COMPATIBLE = ["nvidia,p3737-0000+p3701-0005", "nvidia,p3701-0005", "nvidia,tegra234"]

# Clocks as `jetson_clocks` leaves them in MAXN: every CPU at the Cortex-A78AE cluster's
# maximum, the GPU at its maximum (min == max: "locked").
CPU_MAX_KHZ = 2201600
CPU_MIN_KHZ = 115200
GPU_MAX_HZ = 1300500000
GPU_MIN_HZ = 306000000

# The AGX Orin's first INA3221 (i2c bus 1, address 0x40) and its rails on JetPack 6, in the
# order of the recorded tegrastats line. Power of each rail, a model and not a measurement:
# idle + busy x u, u = the busy fraction of the root's CPUs (the same coefficients as the
# tegrastats stand-in of tests/fixtures/tegrastats_standin: 8.2 W idle, 19.9 W busy).
# Bus voltage: 4992 mV (the rails are measured on the 5 V input side).
RAILS = [("VDD_GPU_SOC", 2400.0, 1500.0), ("VDD_CPU_CV", 1200.0, 9000.0),
         ("VIN_SYS_5V0", 4600.0, 1200.0)]
BUS_MV = 4992
I2C_DEV = "devices/platform/bus@0/c240000.i2c/i2c-1/1-0040"
HWMON = "hwmon1"

README = """\
RECREATED JETSON AGX ORIN FILES - STAND-INS, NOT A BOARD
=========================================================
Written by edgebench's emulated lane (jetson/emulated/tegra.py). This root is an arm64 Debian
run under QEMU user-mode emulation on an x86 host. The files under this folder take the place
of a JetPack 6 AGX Orin's /proc and /sys entries (QEMU opens /X as this folder's X where it
exists): device-tree model, CPU/GPU clock files, INA3221 power rails. Their layout is a
board's; their numbers describe no hardware: the rails are a model of the root's CPU load,
the clocks are constants. /etc/nv_tegra_release is a recorded real file (L4T R36.4.4);
nvpmodel, jetson_clocks and tegrastats are stand-ins that print their real tools' formats.
Timings, power and clocks measured here are not measurements of a Jetson.
"""


def _write(path: Path, text: str | bytes) -> None:
    """Write ``path`` atomically (readers never see a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(text if isinstance(text, bytes) else text.encode())
    os.replace(tmp, path)


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        if path.is_symlink() and os.readlink(path) == target:
            return
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    os.symlink(target, path)


def host_cpus() -> int:
    """The emulated Orin has the host's CPUs (QEMU runs each guest thread on a host thread),
    not the board's 12: saying 12 would make every runtime start 12 threads on them."""
    return len(os.sched_getaffinity(0))


def cpuinfo(n: int) -> str:
    """/proc/cpuinfo of n Cortex-A78AE cores (implementer 0x41 Arm, part 0xd42) as an arm64
    kernel prints it. Under QEMU 7.2 the host's x86 /proc/cpuinfo would otherwise be read by
    aarch64 code that expects an Arm one (ONNX Runtime's cpuinfo crashed at import on it);
    QEMU 9 and later answer /proc/cpuinfo themselves (their emulated CPU), before this prefix
    is looked at, so there this file is not seen."""
    feats = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm "
             "lrcpc dcpop asimddp uscat ilrcpc flagm paca pacg")
    return "".join(f"processor\t: {i}\nBogoMIPS\t: 62.50\nFeatures\t: {feats}\n"
                   "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n"
                   "CPU part\t: 0xd42\nCPU revision\t: 1\n\n" for i in range(n))


def overlay(root: Path) -> Path:
    """(Re)build the board's /proc and /sys entries under ROOT/OVERLAY."""
    ov = root / OVERLAY
    n = host_cpus()
    _write(ov / "README", README)
    # Device tree: /proc/device-tree is a link to /sys/firmware/devicetree/base on a board.
    dt = ov / "sys/firmware/devicetree/base"
    _write(dt / "model", MODEL.encode() + b"\x00")
    _write(dt / "compatible", b"".join(c.encode() + b"\x00" for c in COMPATIBLE))
    _link(ov / "proc/device-tree", "../sys/firmware/devicetree/base")
    _write(ov / "proc/cpuinfo", cpuinfo(n))
    # CPU clocks: clusters of four cores (policy0, policy4, policy8 on a board).
    cpu = ov / "sys/devices/system/cpu"
    for first in range(0, n, 4):
        cpus = list(range(first, min(first + 4, n)))
        pol = cpu / f"cpufreq/policy{first}"
        for name, value in (("scaling_governor", "schedutil"),
                            ("scaling_available_governors", "interactive conservative ondemand "
                                                            "userspace powersave performance schedutil"),
                            ("scaling_min_freq", CPU_MAX_KHZ), ("scaling_max_freq", CPU_MAX_KHZ),
                            ("scaling_cur_freq", CPU_MAX_KHZ), ("cpuinfo_cur_freq", CPU_MAX_KHZ),
                            ("cpuinfo_min_freq", CPU_MIN_KHZ), ("cpuinfo_max_freq", CPU_MAX_KHZ),
                            ("related_cpus", " ".join(map(str, cpus))),
                            ("affected_cpus", " ".join(map(str, cpus)))):
            _write(pol / name, f"{value}\n")
        for c in cpus:
            _link(cpu / f"cpu{c}/cpufreq", f"../cpufreq/policy{first}")
    # GPU (ga10b) devfreq node, as JetPack 6 names it.
    gpu = ov / "sys/class/devfreq/17000000.gpu"
    for name, value in (("min_freq", GPU_MAX_HZ), ("max_freq", GPU_MAX_HZ), ("cur_freq", GPU_MAX_HZ),
                        ("governor", "nvhost_podgov"),
                        ("available_frequencies", f"{GPU_MIN_HZ} {GPU_MAX_HZ}")):
        _write(gpu / name, f"{value}\n")
    # INA3221: the device under the i2c controller, its bus entry and its driver entry.
    dev = ov / "sys" / I2C_DEV
    _write(dev / "name", "ina3221\n")
    hw = dev / "hwmon" / HWMON
    _write(hw / "name", "ina3221\n")
    for i, (label, _, _) in enumerate(RAILS, 1):
        _write(hw / f"in{i}_label", f"{label}\n")
        _write(hw / f"curr{i}_max", "32760\n")
        _write(hw / f"curr{i}_crit", "32760\n")
    _write(hw / "in7_label", "sum of shunt voltages\n")
    write_rails(root, 0.0)
    _link(ov / "sys/bus/i2c/devices/1-0040", "../../../" + I2C_DEV)
    _link(ov / "sys/bus/i2c/drivers/ina3221/1-0040", "../../../../" + I2C_DEV)
    return ov


def write_rails(root: Path, u: float) -> None:
    hw = root / OVERLAY / "sys" / I2C_DEV / "hwmon" / HWMON
    total_ma = 0
    for i, (_, idle, busy) in enumerate(RAILS, 1):
        ma = round((idle + busy * u) * 1000.0 / BUS_MV)
        total_ma += ma
        _write(hw / f"in{i}_input", f"{BUS_MV}\n")
        _write(hw / f"curr{i}_input", f"{ma}\n")
    # Channel 7 is the chip's sum of shunt voltages (mV; 5 mOhm shunts assumed); edgebench
    # skips it, as it does on a board.
    _write(hw / "in7_input", f"{round(total_ma * 5 / 1000)}\n")


def _root_ticks(root_stat: os.stat_result) -> int:
    """CPU ticks (user + system) of every process whose root directory is the emulated root."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{pid}/root")
            if (st.st_dev, st.st_ino) != (root_stat.st_dev, root_stat.st_ino):
                continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])     # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return total


def rails(root: Path, interval_s: float = 0.2) -> int:
    """Update the INA3221 readings every ``interval_s`` from the CPU time the root's
    processes used, until the parent process (run.sh's command) is gone."""
    parent = os.getppid()
    root_stat = os.stat(root)
    hz = os.sysconf("SC_CLK_TCK")
    n = host_cpus()
    before, t0 = _root_ticks(root_stat), time.monotonic()
    while os.getppid() == parent:
        time.sleep(interval_s)
        now, t1 = _root_ticks(root_stat), time.monotonic()
        # Processes that ended between two reads take their ticks with them: u can only be
        # low then, never high; clamp to [0, 1].
        u = min(max((now - before) / hz / max(t1 - t0, 1e-3) / n, 0.0), 1.0)
        before, t0 = now, t1
        write_rails(root, u)
    return 0


def install(root: Path) -> None:
    """Files of a JetPack 6 AGX Orin's root filesystem, and the stand-ins of its tools."""
    shutil.copyfile(NV_TEGRA_RELEASE, root / "etc/nv_tegra_release")
    share = root / "usr/share/edgebench-emulated"
    share.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TEGRASTATS_LINE, share / "tegrastats-template.txt")
    for name, dest in (("nvpmodel", "usr/sbin/nvpmodel"), ("jetson_clocks", "usr/bin/jetson_clocks"),
                       ("tegrastats", "usr/bin/tegrastats")):
        shutil.copyfile(HERE / "tegra" / name, root / dest)
        os.chmod(root / dest, 0o755)
    overlay(root)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("install", "overlay", "rails"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    if not (root / "etc/debian_version").is_file():
        print(f"tegra.py: {root} is not the emulated root (run jetson/emulated/setup.sh)",
              file=sys.stderr)
        return 1
    if argv[0] == "install":
        install(root)
    elif argv[0] == "overlay":
        overlay(root)
    else:
        return rails(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
