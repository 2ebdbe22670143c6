"""System capture: what the process actually ran on, read from the process itself.

Everything here is read back (sysfs, /proc/self, the loaded libraries), not
assumed from what a launcher was asked to do.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import socket
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import psutil

from harness.gpus import gpu_devices
from harness.hugepages import thp_facts
from harness.interpreter import python_info
from harness.isa import IsaInfo, detect_isa

PERF_ENV_PATTERN = re.compile(
    r"^(OMP_|KMP_|GOMP_|MKL_|LD_PRELOAD$|MALLOC_|GLIBC_TUNABLES$|TCMALLOC_|CUDA_VISIBLE_DEVICES$|NCCL_|"
    r"PYTORCH_|TORCH_|TORCHINDUCTOR_|THP_MEM_ALLOC_ENABLE$|HOROVOD_|DNNL_|ONEDNN_|OPENBLAS_|TRAINBENCH_)"
)
"""Environment variables that can change training performance; all of them are recorded."""

LIBRARIES = (
    *("torch", "torchvision", "tensorflow", "tensorflow-cpu", "keras", "numpy", "pillow", "scipy"),
    *("trainbench", "horovod", "nvidia-ml-py"),
)
"""Distributions whose versions are recorded when installed."""

_MAPPED_LIBS = {
    "jemalloc": re.compile(r"libjemalloc[.\w-]*\.so"),
    "tcmalloc": re.compile(r"libtcmalloc[.\w-]*\.so"),
    "intel_openmp": re.compile(r"libiomp5\.so"),
    "gnu_openmp": re.compile(r"libgomp[.\w-]*\.so"),
}


def parse_cpulist(text: str) -> list[int]:
    """Parse a Linux cpulist such as ``"0-3,8,10-11"`` into sorted CPU ids.

    Raises:
        ValueError: the text is not a cpulist.
    """
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            if int(hi) < int(lo):
                raise ValueError(f"bad cpulist range {part!r}")
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return sorted(cpus)


def numa_topology(root: Path = Path("/sys/devices/system/node")) -> list[dict[str, Any]]:
    """NUMA nodes from sysfs: ``[{"node": 0, "cpus": [0, 1], "memory_bytes": ...}, ...]``.

    Returns an empty list where sysfs has no node directory (non-Linux, some containers).
    """
    nodes = []
    for d in sorted(root.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        cpus = parse_cpulist((d / "cpulist").read_text()) if (d / "cpulist").exists() else []
        mem = None
        meminfo = d / "meminfo"
        if meminfo.exists():
            m = re.search(r"MemTotal:\s+(\d+)\s+kB", meminfo.read_text())
            mem = int(m.group(1)) * 1024 if m else None
        nodes.append({"node": int(d.name[4:]), "cpus": cpus, "memory_bytes": mem})
    return nodes


def process_binding() -> dict[str, Any]:
    """CPUs and NUMA memory nodes this process may use, from /proc/self/status."""
    out: dict[str, Any] = {"cpus_allowed": sorted(os.sched_getaffinity(0))}
    with contextlib.suppress(OSError):
        status = Path("/proc/self/status").read_text()
        m = re.search(r"^Mems_allowed_list:\s*(\S+)", status, re.M)
        if m:
            out["mems_allowed"] = parse_cpulist(m.group(1))
    return out


def loaded_libraries() -> dict[str, list[str]]:
    """Allocator and OpenMP libraries mapped into this process (from /proc/self/maps).

    This is how the result proves that an ``LD_PRELOAD``-ed allocator really loaded.
    """
    found: dict[str, set[str]] = {k: set() for k in _MAPPED_LIBS}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split()[-1] if "/" in line else ""
            for name, pat in _MAPPED_LIBS.items():
                if path and pat.search(path):
                    found[name].add(path)
    return {k: sorted(v) for k, v in found.items()}


def _py_cpuinfo() -> dict[str, Any]:
    """py-cpuinfo's description of the CPU, from the sources it reads before CPUID.

    ``cpuinfo.get_cpu_info()`` (py-cpuinfo 9.0.0) starts a Python that runs its sources in order
    and, last, CPUID in a third process, which times the clock for 1 s while its parent polls it
    with ``join(0)`` in a loop: 1.0-1.7 CPU-s per rank on the 2-vCPU Xeon. A lone rank hid it on
    the idle vCPU (tiny runs: 10.7 s of wall either way, 10.6 user-s with it, 9.6 without); ranks
    bound to one CPU each, as numa-ddp binds them, share their CPU with it (15.8 s with it, 15.0 s
    without, medians of 3 interleaved pairs). CPUID only fills fields the earlier sources left
    empty; on Linux ``/proc/cpuinfo`` and ``lscpu`` give every field recorded here, and CPUID
    added only its own spellings of flags the kernel lists (``avx512vnni``). So the same sources
    run here, in this process (about 40 ms), with CPUID off through py-cpuinfo's
    ``DataSource.can_cpuid``; without those names, the public ``get_cpu_info()`` runs instead.
    """
    import cpuinfo

    module = getattr(cpuinfo, "cpuinfo", None)
    source = getattr(module, "DataSource", None)
    internal = getattr(module, "_get_cpu_info_internal", None)
    if source is None or not hasattr(source, "can_cpuid") or not callable(internal):
        return dict(cpuinfo.get_cpu_info())
    source.can_cpuid = False
    return dict(internal())


def _cpu() -> dict[str, Any]:
    info: dict[str, Any] = {}
    try:
        raw = _py_cpuinfo()
        info = {
            "model": raw.get("brand_raw"),
            "vendor": raw.get("vendor_id_raw"),
            "arch": raw.get("arch"),
            "flags": sorted(raw.get("flags", [])),
            "l2_cache_bytes": raw.get("l2_cache_size"),
            "l3_cache_bytes": raw.get("l3_cache_size"),
        }
    except Exception as exc:  # py-cpuinfo shells out (lscpu); record why it failed instead of failing the run
        info = {"model": platform.processor() or None, "error": f"py-cpuinfo failed: {exc}"}
    freq = psutil.cpu_freq()
    info.update(
        logical_cores=psutil.cpu_count(logical=True),
        physical_cores=psutil.cpu_count(logical=False),
        max_mhz=freq.max if freq and freq.max > 0 else None,  # 0.0 where a VM hides it
    )
    return info


def _container() -> dict[str, Any]:
    out: dict[str, Any] = {"in_container": Path("/.dockerenv").exists()}
    for p in ("/sys/fs/cgroup/cpuset.cpus.effective", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"):
        with contextlib.suppress(OSError):
            out["cgroup_cpus"] = Path(p).read_text().strip()
            break
    for p in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError):
            out["cgroup_memory_limit"] = Path(p).read_text().strip()
            break
    out["image"] = os.environ.get("TRAINBENCH_IMAGE")
    return out


def _torch() -> dict[str, Any] | None:
    if "torch" not in sys.modules:
        return None
    import torch

    out: dict[str, Any] = {
        "version": torch.__version__,
        "num_threads": torch.get_num_threads(),
        "num_interop_threads": torch.get_num_interop_threads(),
        "mkldnn_enabled": torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled,  # type: ignore[no-untyped-call]
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cuda_available": torch.cuda.is_available(),
        "cuda_version": torch.version.cuda,
    }
    if torch.cuda.is_available():
        out["cudnn_version"] = torch.backends.cudnn.version()  # type: ignore[no-untyped-call]
        out["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return out


MAX_CPUINFO_BYTES = 4 << 20  # /proc/cpuinfo is read up to this size (hundreds of cores print about 1 MiB)


def _read_cpuinfo(path: Path = Path("/proc/cpuinfo")) -> str | None:
    """The text of /proc/cpuinfo (up to MAX_CPUINFO_BYTES), or None when it cannot be read."""
    try:
        with path.open("rb") as f:
            return f.read(MAX_CPUINFO_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def torch_cpu_capability() -> str | None:
    """``torch.backends.cpu.get_cpu_capability()`` if torch is already imported; never imports it."""
    torch = sys.modules.get("torch")
    return None if torch is None else str(torch.backends.cpu.get_cpu_capability())


_PROBE = "import torch\ntorch.nn.functional.conv2d(torch.randn(2, 16, 32, 32), torch.randn(16, 16, 3, 3))\n"
_ISA_LINE = re.compile(r"onednn_verbose,(?:v\d+,)?info,cpu,isa:(.+)")


def probe_onednn_isa(
    python: str = sys.executable, timeout_s: float = 120.0, env: Mapping[str, str] | None = None
) -> str | None:
    """oneDNN's ISA as it announces it, e.g. ``"Intel AVX-512 with Intel DL Boost and bfloat16 support"``.

    Runs one small convolution in a fresh ``python`` with ``ONEDNN_VERBOSE=1`` and reads the
    ``info,cpu,isa:`` line oneDNN prints once, at its first verbose primitive (so an already
    running torch may be past it: hence the fresh process). It imports torch and costs
    seconds (3.6 s on the loaded 2-vCPU Zen 4): opt-in via ``read_isa(probe_onednn=True)``.
    Returns None when torch is missing, the probe fails or times out, or prints no such line.

    Args:
        python: the interpreter whose torch to ask.
        timeout_s: give up after this many seconds.
        env: the environment of the probe (default ``os.environ``), so its caps apply.
    """
    full = {**(os.environ if env is None else env), "ONEDNN_VERBOSE": "1"}
    try:
        done = subprocess.run(
            [python, "-c", _PROBE], env=full, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in done.stdout.splitlines():
        m = _ISA_LINE.match(line.strip())
        if m:
            return m.group(1).strip()
    return None


def read_isa(*, probe_onednn: bool = False, env: Mapping[str, str] | None = None) -> IsaInfo:
    """This machine's :class:`harness.isa.IsaInfo`: ``/proc/cpuinfo``, ``platform.machine()``, the environment.

    Args:
        probe_onednn: also run :func:`probe_onednn_isa` (seconds; see there).
        env: environment to read the caps from (default ``os.environ``).
    """
    return detect_isa(
        _read_cpuinfo(),
        platform.machine(),
        os.environ if env is None else env,
        torch_cpu_capability=torch_cpu_capability(),
        onednn_isa=probe_onednn_isa(env=env) if probe_onednn else None,
    )


def capture_system(*, probe_onednn: bool = False) -> dict[str, Any]:
    """Describe the machine and this process as a JSON-ready dict.

    Keys: host, cpu, isa (:meth:`harness.isa.IsaInfo.to_dict`: matrix flags, the caps
    ``ONEDNN_MAX_CPU_ISA``/``ATEN_CPU_CAPABILITY``, effective flags, ``bf16_native``,
    torch's CPU capability when torch is imported), numa_nodes, binding, memory (total and
    available bytes, the kernel's transparent-huge-page policy:
    :func:`harness.hugepages.thp_facts`), gpus, python
    (:func:`harness.interpreter.python_info`: version and build), libraries, torch (when
    imported), env (performance-relevant variables), loaded_libraries, container. It runs
    ``lscpu`` and reads /proc and sysfs (about 40 ms); call it outside the measured windows.

    Args:
        probe_onednn: also ask oneDNN for its ISA (``isa.onednn_isa``); starts a Python
            that imports torch, so it costs seconds (:func:`harness.isa.probe_onednn_isa`).
    """
    vm = psutil.virtual_memory()
    libs = {}
    for name in LIBRARIES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            libs[name] = metadata.version(name)
    return {
        "host": {
            "hostname": socket.gethostname(),
            "os": platform.platform(),
            "kernel": platform.release(),
        },
        "cpu": _cpu(),
        "isa": read_isa(probe_onednn=probe_onednn).to_dict(),
        "numa_nodes": numa_topology(),
        "binding": process_binding(),
        "memory": {"total_bytes": vm.total, "available_bytes": vm.available, "transparent_hugepages": thp_facts()},
        "gpus": gpu_devices(),
        "python": python_info(),
        "libraries": libs,
        "torch": _torch(),
        "env": {k: v for k, v in sorted(os.environ.items()) if PERF_ENV_PATTERN.match(k)},
        "loaded_libraries": loaded_libraries(),
        "container": _container(),
    }
