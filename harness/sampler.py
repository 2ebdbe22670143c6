"""Utilization and interference sampling, out of the rank's hot path.

:class:`UtilizationSampler` starts a small sampler process (:mod:`harness.procstat`) that
reads /proc every ``interval_s`` and writes its readings to a file: per-core CPU
utilization, the run tree's RSS, and who used the CPU (the run's process tree, everyone
else, the hypervisor's steal). The rank reads them only after the run (or when asked), so
during the measured windows it spends nothing on sampling: the in-process psutil sampler
this replaces cost about 2 ms of the rank's CPU per reading, plus the GIL it took from the
training loop (figures and the command in ``tests/harness/bench_harness_figures.py``).
The summary and the interference verdict are in :mod:`harness.utilization`.

On a GPU the same process reads NVML too (:mod:`harness.nvml`): utilization, memory, power,
clocks, temperature, clock-event reasons and the energy counter of every GPU of the run, so
that each measurement window gets its GPU figures and energy (:mod:`harness.gpu_telemetry`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from harness.gpu_telemetry import GpuReading
from harness.procstat import resolve_root
from harness.utilization import UtilizationSample, UtilizationSummary, WindowInterference, summarize_utilization

__all__ = [
    "UtilizationSample",
    "UtilizationSampler",
    "UtilizationSummary",
    "WindowInterference",
    "summarize_utilization",
]


class UtilizationSampler:
    """Samples utilization and interference in a separate process; use as a context manager.

    The run's process tree starts at ``root_pid``; by default the ``TRAINBENCH_ROOT_PID``
    of the environment when that process is this one or an ancestor (the supervisor sets it
    to itself, so sibling ranks count as the run), else this process. The sampler process is
    a child of this one, so its own CPU time counts as the run's, not as interference.
    Readings go to an unlinked temporary file that the rank reads only when asked
    (:attr:`samples`, :meth:`stop`): no thread of the rank wakes up during the run.

    Args:
        interval_s: seconds between readings (> 0).
        origin: ``time.perf_counter()`` value that ``t_s`` is relative to (the sampler
            process reads the same CLOCK_MONOTONIC).
        root_pid: root of the run's process tree (default: see above).
        gpus: UUIDs of GPUs to read through NVML besides those the sampler finds the run's
            tree using; default: :func:`cuda_devices_in_use` (the CUDA device this process
            works on, or none for a CPU run). Pass ``[]`` to read no GPU.

    Attributes:
        error: why the sampler process stopped early (e.g. no /proc), or None.
        gpu_error: why the GPUs could not be read (e.g. no NVML), or None.
    """

    def __init__(
        self,
        interval_s: float = 0.5,
        origin: float = 0.0,
        root_pid: int | None = None,
        gpus: Sequence[str] | None = None,
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = interval_s
        self.origin = origin
        self.root_pid = resolve_root(os.environ, os.getpid()) if root_pid is None else root_pid
        self.gpus = list(cuda_devices_in_use() if gpus is None else gpus)
        self.error: str | None = None
        self.gpu_error: str | None = None
        self._pending_gpu_error: str | None = None
        self._samples: list[UtilizationSample] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._out: BinaryIO | None = None
        self._partial = b""

    @property
    def pid(self) -> int | None:
        """The sampler process's pid between :meth:`start` and :meth:`stop`, else None."""
        return self._proc.pid if self._proc is not None else None

    @property
    def samples(self) -> list[UtilizationSample]:
        """Readings so far, in time order (reads what the sampler process wrote since the last call)."""
        self._drain()
        return self._samples

    def start(self) -> UtilizationSampler:
        """Start the sampler process."""
        env = dict(os.environ)
        here = str(Path(__file__).resolve().parent.parent)  # the directory holding the harness package
        nvml = importlib.util.find_spec("pynvml") if self.gpus else None  # found, not imported
        lib = str(Path(nvml.origin).parent) if nvml is not None and nvml.origin else None  # -S skips site
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH"), lib) if p)
        fd, path = tempfile.mkstemp(prefix="trainbench-sampler-", suffix=".jsonl")
        try:
            self._out = open(path, "rb")  # noqa: SIM115 - read until stop(); its own offset, apart from the writer
            with os.fdopen(fd, "ab") as writer:
                self._proc = subprocess.Popen(
                    [sys.executable, "-S", "-m", "harness.procstat", *self._args()],
                    stdin=subprocess.PIPE,
                    stdout=writer,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
        finally:
            os.unlink(path)  # the open descriptors keep it alive; nothing is left behind
        return self

    def _args(self) -> list[str]:
        """The sampler process's arguments: root pid, interval, then the GPUs' UUIDs."""
        return [str(self.root_pid), repr(self.interval_s), *self.gpus]

    def _drain(self) -> None:
        if self._out is None:
            return
        data = self._partial + self._out.read()
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            self._parse(line)

    def _parse(self, line: str | bytes) -> None:
        """One line of the sampler process: a reading, or why it stopped."""
        raw = json.loads(line)
        if "error" in raw:
            self.error = str(raw["error"])
            return
        if "gpu_error" in raw:
            self.gpu_error = self._pending_gpu_error = str(raw["gpu_error"])
            return
        gpus = None
        if "gpu" in raw:
            gpus = [GpuReading(t_s=g.pop("t") - self.origin, **g) for g in raw["gpu"]]
        error, self._pending_gpu_error = self._pending_gpu_error, None
        self._samples.append(
            UtilizationSample(
                t_s=raw["t"] - self.origin,
                cpu_percent=raw["cpu"],
                rss_bytes=raw["rss"],
                machine_cpu_s=raw["machine_s"],
                run_cpu_s=raw["run_s"],
                others_cpu_s=raw["others_s"],
                steal_s=raw["steal_s"],
                gpus=gpus,
                gpu_error=error,
            )
        )

    def stop(self) -> list[UtilizationSample]:
        """Stop the sampler process (by closing its stdin) and return every reading."""
        proc = self._proc
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                code = proc.wait(timeout=5 * self.interval_s + 5)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0 and self.error is None:
                self.error = f"the sampler process exited with code {code}"
            self._proc = None
        self._drain()
        if self._out is not None:
            self._out.close()
            self._out = None
        return self._samples

    def __enter__(self) -> UtilizationSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cuda_devices_in_use() -> list[str]:
    """UUID of the CUDA device this process works on, when it has initialised CUDA through torch; else ``[]``.

    torch is looked up in ``sys.modules``, never imported: a CPU run, or a process that has
    not touched CUDA yet, gets ``[]`` and its sampler never loads NVML. Build the workload
    (which picks its device) before starting the sampler.
    """
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_initialized():
            return []
        return [str(torch.cuda.get_device_properties(torch.cuda.current_device()).uuid)]
    except Exception:  # a broken CUDA state must not stop the run: the sampler then reads no GPU
        return []
