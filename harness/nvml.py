"""Reading the run's GPUs through NVML (nvidia-ml-py), in the sampler process.

:class:`NvmlReader` is what ``python -m harness.procstat`` uses when it is asked to sample
GPUs: it reads the GPUs it was given (the rank's own device, by UUID) and every GPU on
which a process of the run's tree holds a compute context (``nvmlDeviceGetComputeRunningProcesses``;
sibling ranks' GPUs on this host), one JSON-ready dict per GPU per reading in the field
names of :class:`harness.gpu_telemetry.GpuReading`. A field a device does not support
(the energy counter before Volta, clocks in some virtual machines) is None, never guessed.

Only the standard library and ``pynvml`` are imported, so the sampler process stays small.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness.gpus import optional_query


class NvmlUnavailable(RuntimeError):
    """NVML cannot be used here: nvidia-ml-py is missing, there is no driver, or a GPU is unknown."""


def _ask(query: Callable[..., Any], *args: Any) -> Any:
    """``query(*args)``, or None where NVML refuses it (not supported on this device, no permission)."""
    return optional_query(functools.partial(query, *args))


def _key(uuid: str) -> str:
    """A UUID for matching: lower case, without the ``GPU-`` prefix and dashes (CUDA and NVML spell it apart)."""
    return uuid.lower().removeprefix("gpu-").replace("-", "")


def _uuid(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class NvmlReader:
    """Reads the run's GPUs; one :meth:`read` per sampler interval.

    Args:
        uuids: GPUs to read from the start, e.g. ``GPU-5c9b...``; matched to NVML's UUIDs
            without regard to case, dashes or the ``GPU-`` prefix (CUDA's and NVML's spellings).

    Attributes:
        unknown: why some of ``uuids`` are not read (none of this host's GPUs has that UUID),
            or None; the GPUs the run's processes use are still found (:meth:`add_tree`).

    Raises:
        NvmlUnavailable: nvidia-ml-py is not installed, ``nvmlInit`` fails (no driver), or NVML
            cannot list the GPUs; the message says which.
    """

    def __init__(self, uuids: Sequence[str]) -> None:
        try:
            import pynvml
        except ImportError as exc:
            raise NvmlUnavailable(f"nvidia-ml-py is not installed ({exc}); pip install nvidia-ml-py") from exc
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
            raise NvmlUnavailable(f"NVML unavailable: {exc}") from exc
        self.nv: Any = pynvml
        self.gpus: dict[str, tuple[int, Any]] = {}
        self._others: dict[str, tuple[int, Any]] = {}
        self.unknown: str | None = None
        try:
            for i in range(pynvml.nvmlDeviceGetCount()):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                self._others[_uuid(pynvml.nvmlDeviceGetUUID(h))] = (i, h)
        except Exception as exc:
            self.close()
            raise NvmlUnavailable(f"NVML cannot list the GPUs: {exc}") from exc
        by_key = {_key(u): u for u in self._others}
        missing = []
        for u in uuids:
            name = by_key.get(_key(u))
            if name is None:
                missing.append(u)
            elif name in self._others:
                self.gpus[name] = self._others.pop(name)
        if missing:
            self.unknown = (
                f"no GPU with UUID {', '.join(missing)} on this host (NVML lists "
                f"{', '.join(sorted(by_key.values()))}); reading the GPUs the run's processes use instead"
            )

    def add_tree(self, pids: Iterable[int]) -> None:
        """Also read, from now on, every GPU on which one of ``pids`` holds a compute context."""
        if not self._others:
            return
        members = set(pids)
        for u, (_, h) in list(self._others.items()):
            procs = _ask(self.nv.nvmlDeviceGetComputeRunningProcesses, h) or []
            if any(getattr(p, "pid", None) in members for p in procs):
                self.gpus[u] = self._others.pop(u)

    def read(self) -> list[dict[str, Any]]:
        """One reading per GPU: ``{"t", "uuid", "index", "util_percent", "memory_used_bytes", "power_w",
        "energy_j", "sm_clock_mhz", "memory_clock_mhz", "temperature_c", "clock_event_reasons"}``;
        ``t`` is ``time.perf_counter()`` when the GPU was read."""
        nv = self.nv
        reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        out = []
        for u, (i, h) in self.gpus.items():
            util = _ask(nv.nvmlDeviceGetUtilizationRates, h)
            memory = _ask(nv.nvmlDeviceGetMemoryInfo, h)
            power_mw = _ask(nv.nvmlDeviceGetPowerUsage, h)
            energy_mj = _ask(nv.nvmlDeviceGetTotalEnergyConsumption, h)
            mask = None if reasons is None else _ask(reasons, h)
            out.append(
                {
                    "t": time.perf_counter(),
                    "uuid": u,
                    "index": i,
                    "util_percent": None if util is None else float(util.gpu),
                    "memory_used_bytes": None if memory is None else int(memory.used),
                    "power_w": None if power_mw is None else power_mw / 1000.0,
                    "energy_j": None if energy_mj is None else energy_mj / 1000.0,
                    "sm_clock_mhz": _ask(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
                    "memory_clock_mhz": _ask(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
                    "temperature_c": _ask(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                    "clock_event_reasons": None if mask is None else int(mask),
                }
            )
        return out

    def close(self) -> None:
        """Shut NVML down (idempotent)."""
        nv, self.nv = getattr(self, "nv", None), None
        if nv is not None:
            optional_query(nv.nvmlShutdown)
