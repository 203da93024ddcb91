"""NVIDIA GPU power and memory through NVML (``nvidia-ml-py``, imported as ``pynvml``).

Power: ``nvmlDeviceGetFieldValues(h, [NVML_FI_DEV_POWER_INSTANT])`` where the driver has it
(instantaneous, mW); else ``nvmlDeviceGetPowerUsage`` (mW) - which on Ampere and newer with
recent drivers is a one-second average, said in the caveat. Covers the GPU board only (not
CPU, RAM or the rest of the machine). Jetson Orin on JetPack 5/6 has no NVML; Thor
(JetPack 7) does.
"""
from __future__ import annotations

from .power import PowerSource


def _nvml():
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    return pynvml


class NvmlSource(PowerSource):
    name = "nvml"

    def __init__(self, index: int | None = None):
        self._nv = _nvml()
        nv = self._nv
        count = nv.nvmlDeviceGetCount()
        if count == 0:
            raise RuntimeError("NVML sees no GPU")
        idx = range(count) if index is None else [index]
        self._handles = [(i, nv.nvmlDeviceGetHandleByIndex(i)) for i in idx]
        self._instant = hasattr(nv, "NVML_FI_DEV_POWER_INSTANT")
        self.read_mw()  # fails at detection where power is not supported
        kind = "instantaneous (NVML_FI_DEV_POWER_INSTANT)" if self._instant else \
            "nvmlDeviceGetPowerUsage (a 1 s average on recent GPUs/drivers)"
        self.caveat = f"NVML: GPU board power only, {kind}; CPU, RAM and the rest not included"

    def _power_mw(self, h) -> float:
        nv = self._nv
        if self._instant:
            try:
                vals = nv.nvmlDeviceGetFieldValues(h, [nv.NVML_FI_DEV_POWER_INSTANT])
                v = vals[0]
                if v.nvmlReturn == 0:
                    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal",
                              "usVal")[int(v.valueType)]
                    return float(getattr(v.value, member))
            except Exception:  # noqa: BLE001 - field unsupported on this driver
                pass
            self._instant = False
        return float(nv.nvmlDeviceGetPowerUsage(h))

    def read_mw(self) -> dict[str, float]:
        out = {f"gpu{i}": self._power_mw(h) for i, h in self._handles}
        out["total"] = sum(out.values())
        return out

    def close(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def device_memory_mb(index: int = 0):
    """A ``Monitor(device_memory=...)`` hook: used memory of GPU ``index`` in MiB, or None
    where NVML is absent. Device-wide, not per process."""
    try:
        nv = _nvml()
        h = nv.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # noqa: BLE001
        return None

    def read() -> float | None:
        try:
            return nv.nvmlDeviceGetMemoryInfo(h).used / 2**20
        except Exception:  # noqa: BLE001
            return None

    return read


def cuda_version_str(v: int) -> str:
    """NVML's CUDA version integer (major * 1000 + minor * 10, e.g. 13000) as "13.0"."""
    return f"{v // 1000}.{(v % 1000) // 10}"


def gpu_info() -> tuple[list[dict] | None, str]:
    """[{index, name, memory_total_mb, driver, compute_capability, cuda_driver}] or
    (None, reason)."""
    try:
        nv = _nvml()
    except Exception as e:  # noqa: BLE001
        return None, f"NVML unavailable: {type(e).__name__}: {e}"
    try:
        driver = nv.nvmlSystemGetDriverVersion()
        try:
            # A system value, like the driver's: asked once. v1 answers without libcuda
            # (v2 asks libcuda.so, absent in driver-only containers like the H100 runs).
            cuda_driver = cuda_version_str(nv.nvmlSystemGetCudaDriverVersion())
        except Exception:  # noqa: BLE001 - old pynvml/driver
            cuda_driver = None
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            name = nv.nvmlDeviceGetName(h)
            info = {"index": i, "name": name.decode() if isinstance(name, bytes) else name,
                    "driver": driver.decode() if isinstance(driver, bytes) else driver}
            try:
                info["memory_total_mb"] = nv.nvmlDeviceGetMemoryInfo(h).total / 2**20
            except Exception:  # noqa: BLE001 - not supported on Tegra
                info["memory_total_mb"] = None
            try:
                info["compute_capability"] = ".".join(map(str, nv.nvmlDeviceGetCudaComputeCapability(h)))
            except Exception:  # noqa: BLE001
                pass
            if cuda_driver:
                info["cuda_driver"] = cuda_driver
            out.append(info)
        return out, ""
    except Exception as e:  # noqa: BLE001
        return None, f"NVML query failed: {type(e).__name__}: {e}"
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
