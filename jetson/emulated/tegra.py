#!/usr/bin/env python3
"""The recreated Jetson AGX Orin system of the emulated lane: run on the x86 host (natively,
standard library only) by setup.sh and run.sh. Nothing here runs inside the emulated root.

    tegra.py install ROOT     files a JetPack 6 AGX Orin has in its root filesystem:
                              /etc/nv_tegra_release (a recorded real file), /etc/nvpmodel.conf
                              (AGX Orin's modes, see POWER_MODES), /var/lib/nvpmodel/status and
                              the stand-ins /usr/sbin/nvpmodel, /usr/bin/jetson_clocks,
                              /usr/bin/tegrastats
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
this host, so the entries live in OVERLAY, a folder of the root, and reach the root's
processes two ways (run.sh):
- /sys is a read-only overlayfs mount of OVERLAY/sys over the host's /sys: the files exist at
  their real paths for every system call. (QEMU's path prefix alone, which run.sh used first,
  covers open() and stat() but not access()/faccessat(): jetson-stats checks each INA3221
  file with os.access() before reading it, and found none.)
- /proc: QEMU's path prefix (QEMU_LD_PREFIX=OVERLAY): QEMU's user-mode emulation opens /X as
  OVERLAY/X when that exists, else /X (QEMU's util/path.c). procfs cannot be an overlayfs
  layer.
Every process in the root runs under QEMU, so all of them see the same files; the host's /proc
and /sys serve everything else (processes, memory, CPU topology). Symlinks inside OVERLAY are
relative, as they are in sysfs, so they resolve inside OVERLAY and inside the mount.

Files that change while a root's processes run (rails, clocks) are rewritten in place, never
replaced: an overlayfs mount keeps the inode it first found, and would not see a new one.
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
CPU_RAIL = "VDD_CPU_CV"     # its busy part scales with the CPU clock cap (a power mode's)

# AGX Orin power modes, from jetson-stats' recorded `nvpmodel -p --verbose` of an AGX Orin
# (rbonghi/jetson_stats, tests/nvpmodel, show_verbose_orin(), added 2023-01-03, JetPack 5),
# matched by a real AGX Orin `jetson_clocks --show` in MODE_30W (8 CPUs at 1728000 kHz, GPU
# 612 MHz: the 624.75 MHz cap rounded down to the GPU's frequency table, 4 active TPCs) and
# NVIDIA's forum (mode 0 MAXN, 1 15W with 4 cores, 2 30W with 8, 3 50W with 12).
# (id, name, CPU cores online, TPC_PG_MASK, CPU max kHz, GPU max Hz); -1: no cap. The modes
# whose TPC masks differ switch only through a reboot (nvpmodel prompts for it): from MAXN,
# 50W switches live; 30W and 15W do not.
POWER_MODES = [(0, "MAXN", 12, 0, -1, -1), (1, "MODE_15W", 4, 248, 1113600, 420750000),
               (2, "MODE_30W", 8, 240, 1728000, 624750000),
               (3, "MODE_50W", 12, 0, 1497600, 828750000)]
DEFAULT_MODE = 2            # PM_CONFIG DEFAULT=MODE_30W(2) in the same dump
START_MODE = 0              # the emulated board starts in MAXN with clocks locked, as one
                            # set up for benchmarking is (jetson/setup-jetpack6.sh's advice)
CPU_MODE_MIN_KHZ = 729600   # every mode's CPU_A78_x MIN_FREQ
# The GPU's frequency steps (ga10b: 306 MHz + n x 102 MHz, up to 1300.5 MHz): nvpmodel's cap
# lands on the step at or below it (624.75 -> 612 MHz, as recorded).
GPU_FREQS_HZ = [306000000, 408000000, 510000000, 612000000, 714000000, 816000000,
                918000000, 1020000000, 1122000000, 1224000000, 1300500000]
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
    """Write ``path``: a new file atomically; an existing one in place, and only when its
    content changes (an overlayfs mount of this folder keeps the inode it found, see above).
    In place: the new bytes over the old, then cut to length, so a reader sees the old value,
    the new one, or the new one followed by the old one's tail on a second line, never an
    empty file."""
    data = text if isinstance(text, bytes) else text.encode()
    if path.is_file() and not path.is_symlink():
        fd = os.open(path, os.O_RDWR)
        try:
            if os.pread(fd, len(data) + 1, 0) != data:
                os.pwrite(fd, data, 0)
                os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
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
    # CPU clocks: clusters of four cores (policy0, policy4, policy8 on a board). The limits are
    # written once, at MAXN with jetson_clocks' lock; after that the nvpmodel and
    # jetson_clocks stand-ins own them (a mode set stays set across run.sh invocations).
    cpu = ov / "sys/devices/system/cpu"
    for first in range(0, n, 4):
        cpus = list(range(first, min(first + 4, n)))
        pol = cpu / f"cpufreq/policy{first}"
        for name, value in (("scaling_governor", "schedutil"),
                            ("scaling_available_governors", "interactive conservative ondemand "
                                                            "userspace powersave performance schedutil"),
                            ("cpuinfo_min_freq", CPU_MIN_KHZ), ("cpuinfo_max_freq", CPU_MAX_KHZ),
                            ("related_cpus", " ".join(map(str, cpus))),
                            ("affected_cpus", " ".join(map(str, cpus)))):
            _write(pol / name, f"{value}\n")
        for name in ("scaling_min_freq", "scaling_max_freq", "scaling_cur_freq", "cpuinfo_cur_freq"):
            if not (pol / name).exists():
                _write(pol / name, f"{CPU_MAX_KHZ}\n")
        for c in cpus:
            _link(cpu / f"cpu{c}/cpufreq", f"../cpufreq/policy{first}")
    # GPU (ga10b) devfreq node, as JetPack 6 names it.
    gpu = ov / "sys/class/devfreq/17000000.gpu"
    for name, value in (("governor", "nvhost_podgov"),
                        ("available_frequencies", " ".join(map(str, GPU_FREQS_HZ)))):
        _write(gpu / name, f"{value}\n")
    for name in ("min_freq", "max_freq", "cur_freq"):
        if not (gpu / name).exists():
            _write(gpu / name, f"{GPU_MAX_HZ}\n")
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
    # The hwmon class entry of the same device, as on a board (jetson-stats' fan and
    # temperature services list /sys/class/hwmon).
    _link(ov / "sys/class/hwmon" / HWMON, f"../../{I2C_DEV}/hwmon/{HWMON}")
    return ov


def cpu_cap_ratio(root: Path) -> float:
    """The CPU clock cap (a power mode's, policy0's scaling_max_freq) over the Orin's maximum."""
    try:
        f = root / OVERLAY / "sys/devices/system/cpu/cpufreq/policy0/scaling_max_freq"
        return min(max(int(f.read_text().split()[0]) / CPU_MAX_KHZ, 0.0), 1.0)
    except (OSError, ValueError, IndexError):
        return 1.0


def write_rails(root: Path, u: float, cpu_ratio: float = 1.0) -> None:
    hw = root / OVERLAY / "sys" / I2C_DEV / "hwmon" / HWMON
    total_ma = 0
    for i, (label, idle, busy) in enumerate(RAILS, 1):
        scale = cpu_ratio if label == CPU_RAIL else 1.0
        ma = round((idle + busy * u * scale) * 1000.0 / BUS_MV)
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
    processes used, until the parent process (run.sh's command) is gone. One follower writes
    at a time (several run.sh may run at once: the jtop service and a run): the others wait
    for its lock and take over when its command ends."""
    import fcntl

    parent = os.getppid()
    lock = open(root / "run/edgebench-rails.lock", "a")
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if os.getppid() != parent:
                return 0
            time.sleep(interval_s)
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
        write_rails(root, u, cpu_cap_ratio(root))
    return 0


def nvpmodel_conf() -> str:
    """/etc/nvpmodel.conf in the real file's syntax (NVIDIA/skills jetson-customize-nvpmodel:
    ``< POWER_MODEL ID=n NAME=X >`` blocks, -1 = no cap, ``< PM_CONFIG DEFAULT=n >``), for the
    modes of POWER_MODES; CPU clusters of four cores (CPU_A78_0..2), a cluster listed when a
    core of it is online. The PARAM blocks that map each name to its sysfs file are left out:
    the stand-in knows the recreated files itself."""
    out = ["# STAND-IN (edgebench emulated Orin, jetson/emulated/tegra.py): the AGX Orin's power",
           "# modes as jetson-stats recorded them; nvpmodel here is a stand-in that reads this.", ""]
    for mid, name, cores, mask, cpu_max, gpu_max in POWER_MODES:
        out.append(f"< POWER_MODEL ID={mid} NAME={name} >")
        out += [f"CPU_ONLINE CORE_{c} {int(c < cores)}" for c in range(12)]
        out += [f"TPC_POWER_GATING TPC_PG_MASK {mask}", "GPU_POWER_CONTROL_ENABLE GPU_PWR_CNTL_EN on"]
        for cl in range((cores + 3) // 4):
            out += [f"CPU_A78_{cl} MIN_FREQ {CPU_MODE_MIN_KHZ}", f"CPU_A78_{cl} MAX_FREQ {cpu_max}"]
        out += ["GPU MIN_FREQ 0", f"GPU MAX_FREQ {gpu_max}",
                "GPU_POWER_CONTROL_DISABLE GPU_PWR_CNTL_DIS auto", ""]
    out.append(f"< PM_CONFIG DEFAULT={DEFAULT_MODE} >")
    return "\n".join(out) + "\n"


def install(root: Path) -> None:
    """Files of a JetPack 6 AGX Orin's root filesystem, and the stand-ins of its tools."""
    shutil.copyfile(NV_TEGRA_RELEASE, root / "etc/nv_tegra_release")
    _write(root / "etc/nvpmodel.conf", nvpmodel_conf())
    status = root / "var/lib/nvpmodel/status"
    if not status.exists():             # the mode a board is in survives a re-install
        _write(status, f"pmode:{START_MODE:04d}\n")
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
