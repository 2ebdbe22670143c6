"""GPU capture for the system description: what NVML (nvidia-ml-py) reports about each device.

Read from the driver, not assumed: model, memory, the driver and the CUDA version it
supports, compute capability, maximum clocks, enforced power limit and PCIe link. A
field that NVML does not support on a device (e.g. NVLink on a PCIe card, clocks in
some virtual machines) is left out rather than guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def cuda_version_text(encoded: int) -> str:
    """NVML's CUDA driver version integer as text: ``13000`` -> ``"13.0"``, ``12040`` -> ``"12.4"``.

    NVML encodes it as ``1000 * major + 10 * minor`` (``nvmlSystemGetCudaDriverVersion``).

    Raises:
        ValueError: ``encoded`` is negative.
    """
    if encoded < 0:
        raise ValueError(f"bad CUDA driver version {encoded}")
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def optional_query(query: Callable[[], Any]) -> Any:
    """``query()``, or None when NVML refuses it (not supported, no permission, old driver)."""
    try:
        return query()
    except Exception:  # pynvml.NVMLError and its many subclasses; a missing function raises AttributeError
        return None


def _device(nv: Any, index: int) -> dict[str, Any]:
    """One device: the fields always recorded, then the optional ones NVML answers."""
    h = nv.nvmlDeviceGetHandleByIndex(index)
    dev: dict[str, Any] = {
        "index": index,
        "name": nv.nvmlDeviceGetName(h),
        "uuid": nv.nvmlDeviceGetUUID(h),
        "memory_bytes": int(nv.nvmlDeviceGetMemoryInfo(h).total),
    }
    cc = optional_query(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    sm = optional_query(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
    mem = optional_query(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM))
    power_mw = optional_query(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
    gen = optional_query(lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h))
    width = optional_query(lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h))
    optional = {
        "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
        "max_sm_clock_mhz": int(sm) if sm else None,
        "max_memory_clock_mhz": int(mem) if mem else None,
        "power_limit_w": power_mw / 1000 if power_mw else None,
        "pcie_link_max": f"gen{gen} x{width}" if gen and width else None,
    }
    dev.update({k: v for k, v in optional.items() if v is not None})
    return dev


def gpu_devices() -> dict[str, Any]:
    """NVIDIA GPUs from NVML.

    Returns:
        ``{"devices": [...], "driver": "580.159.04", "cuda_driver_version": "13.0"}``, each
        device with ``index``, ``name``, ``uuid``, ``memory_bytes`` and, where NVML answers,
        ``compute_capability`` ("9.0"), ``max_sm_clock_mhz``, ``max_memory_clock_mhz``,
        ``power_limit_w`` (enforced, watts) and ``pcie_link_max`` ("gen5 x16"); or
        ``{"devices": [], "note": why}`` without nvidia-ml-py or a driver.

    Raises:
        pynvml.NVMLError: NVML started but cannot list a device's name, UUID or memory.
    """
    try:
        import pynvml
    except ImportError:
        return {"devices": [], "note": "nvidia-ml-py not installed"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # no driver: the common CPU-only case
        return {"devices": [], "note": f"NVML unavailable: {exc}"}
    try:
        out: dict[str, Any] = {
            "devices": [_device(pynvml, i) for i in range(pynvml.nvmlDeviceGetCount())],
            "driver": pynvml.nvmlSystemGetDriverVersion(),
        }
        cuda = optional_query(pynvml.nvmlSystemGetCudaDriverVersion)
        if isinstance(cuda, int) and cuda > 0:
            out["cuda_driver_version"] = cuda_version_text(cuda)
        return out
    finally:
        pynvml.nvmlShutdown()
