"""Utilization and interference sampling, out of the rank's hot path.

:class:`UtilizationSampler` starts a small sampler process (:mod:`harness.procstat`) that
reads /proc every ``interval_s`` and streams its readings back over a pipe: per-core CPU
utilization, the run tree's RSS, and who used the CPU (the run's process tree, everyone
else, the hypervisor's steal). The rank only parses one short JSON line per reading on a
thread that otherwise sleeps in ``read()``: the in-process psutil sampler it replaces cost
2.6 ms of CPU per reading and took 8.6 ms from a pure-Python main thread (figures with the
command in the module's tests' benchmark, ``tests/harness/bench_harness_figures.py``).
The summary and the interference verdict are in :mod:`harness.utilization`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

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

    Args:
        interval_s: seconds between readings (> 0).
        origin: ``time.perf_counter()`` value that ``t_s`` is relative to (the sampler
            process reads the same CLOCK_MONOTONIC).
        root_pid: root of the run's process tree (default: see above).

    Attributes:
        samples: readings so far (appended as they arrive).
        error: why the sampler process stopped early (e.g. no /proc), or None.
    """

    def __init__(self, interval_s: float = 0.5, origin: float = 0.0, root_pid: int | None = None) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = interval_s
        self.origin = origin
        self.root_pid = resolve_root(os.environ, os.getpid()) if root_pid is None else root_pid
        self.samples: list[UtilizationSample] = []
        self.error: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> UtilizationSampler:
        """Start the sampler process and the thread that collects its readings."""
        env = dict(os.environ)
        here = str(Path(__file__).resolve().parent.parent)  # the directory holding the harness package
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-S", "-m", "harness.procstat", str(self.root_pid), repr(self.interval_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        assert self._proc.stdout is not None
        self._thread = threading.Thread(target=self._collect, args=(self._proc.stdout,), daemon=True)
        self._thread.name = "trainbench-sampler"
        self._thread.start()
        return self

    def _collect(self, stream: IO[str]) -> None:
        for line in stream:
            raw = json.loads(line)
            if "error" in raw:
                self.error = str(raw["error"])
                continue
            self.samples.append(
                UtilizationSample(
                    t_s=raw["t"] - self.origin,
                    cpu_percent=raw["cpu"],
                    rss_bytes=raw["rss"],
                    machine_cpu_s=raw["machine_s"],
                    run_cpu_s=raw["run_s"],
                    others_cpu_s=raw["others_s"],
                    steal_s=raw["steal_s"],
                )
            )

    def stop(self) -> list[UtilizationSample]:
        """Stop the sampler process (by closing its stdin) and return the readings."""
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
        if self._thread is not None:
            self._thread.join(timeout=5)
        return self.samples

    def __enter__(self) -> UtilizationSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
