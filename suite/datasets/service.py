"""The remote side of offloaded preprocessing: a tf.data service dispatcher and its workers.

``trainbench data-service dispatcher`` and ``trainbench data-service worker`` start
TensorFlow's own servers (``tf.data.experimental.service.DispatchServer`` and
``WorkerServer``); trainbench adds only start-up, CPU pinning and a readiness line.
A trainer run with ``--set input_pipeline=tfdata-service --set data_service=HOST:PORT``
sends its dataset graph to the dispatcher, the workers execute it, and the trainer
reads the batches.

:class:`LocalService` starts a dispatcher and workers as processes on this machine
(loopback), as the tests and ``trainbench bench-mnist`` do.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from harness.system import parse_cpulist
from suite.errors import BadInput

READY = "trainbench-data-service-ready"
"""First word of the line a server prints on stdout once it serves: ``READY <role> <address> <cpus>``."""
DEFAULT_DISPATCHER_PORT = 5050
HEARTBEAT_MS = 1000
"""How often a worker asks the dispatcher for new work: a new trainer's job reaches every worker within it."""
START_TIMEOUT_S = 180.0
"""Seconds a server may take to import TensorFlow and start listening."""


class DataServiceError(BadInput, RuntimeError):
    """A dispatcher or worker could not start (bad CPUs, a taken port, no TensorFlow); the message says why."""


def pin_cpus(cpus: str | None) -> list[int]:
    """Restrict this process (and the threads it starts later) to the cpulist ``cpus``; returns the allowed CPUs.

    Call it before TensorFlow is imported, so its thread pools are sized and placed on these CPUs.

    Raises:
        DataServiceError: not a cpulist, or CPUs this process may not use.
    """
    if cpus is not None:
        try:
            wanted = set(parse_cpulist(cpus))
        except ValueError as exc:
            raise DataServiceError(f"--cpus {cpus!r} is not a cpulist such as 1 or 0-3,8: {exc}") from exc
        allowed = os.sched_getaffinity(0)
        if not wanted or not wanted <= allowed:
            raise DataServiceError(f"--cpus {cpus}: this process may use CPUs {sorted(allowed)} only")
        os.sched_setaffinity(0, wanted)
    return sorted(os.sched_getaffinity(0))


def _tensorflow() -> Any:
    """Import TensorFlow, or say how to install it.

    Raises:
        DataServiceError: TensorFlow is not installed.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise DataServiceError(
            f"the data service needs TensorFlow ({exc}); install trainbench's offload extra: "
            "pip install -e '.[offload]'"
        ) from exc
    return tf


def _serve(start: Callable[[], tuple[str, Callable[[], None]]], role: str, cpus: list[int]) -> None:
    """Start a server, print the readiness line, block until SIGINT/SIGTERM, stop it."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    address, shutdown = start()
    print(f"{READY} {role} {address} {','.join(map(str, cpus))}", flush=True)
    while not stop.wait(0.5):
        pass
    shutdown()


def run_dispatcher(port: int, cpus: str | None = None) -> None:
    """Serve a tf.data service dispatcher on ``port`` (0 = any free port) until SIGINT/SIGTERM.

    Raises:
        DataServiceError: bad CPUs, or the port cannot be bound.
    """
    allowed = pin_cpus(cpus)

    def start() -> tuple[str, Callable[[], None]]:
        tf = _tensorflow()

        try:
            server = tf.data.experimental.service.DispatchServer(
                tf.data.experimental.service.DispatcherConfig(port=port)
            )
        except Exception as exc:  # TensorFlow raises its own error types for a taken port
            raise DataServiceError(f"the dispatcher cannot listen on port {port}: {exc}") from exc
        bound = server.target.rsplit(":", 1)[1]
        return f"0.0.0.0:{bound}", server._stop

    _serve(start, "dispatcher", allowed)


def run_worker(dispatcher: str, port: int, advertise: str, cpus: str | None = None) -> None:
    """Serve a tf.data service worker registered with ``dispatcher`` (HOST:PORT) until SIGINT/SIGTERM.

    Args:
        dispatcher: the dispatcher's HOST:PORT.
        port: port to listen on (0 = any free port).
        advertise: host name or address under which trainers reach this worker.
        cpus: cpulist to pin the worker to (None = all this process may use); its
            tf.data thread pool is sized to these CPUs.

    Raises:
        DataServiceError: bad CPUs or address, or the port cannot be bound.
    """
    if ":" not in dispatcher:
        raise DataServiceError(f"--dispatcher {dispatcher!r} must be HOST:PORT")
    allowed = pin_cpus(cpus)

    def start() -> tuple[str, Callable[[], None]]:
        tf = _tensorflow()

        config = tf.data.experimental.service.WorkerConfig(
            dispatcher_address=dispatcher,
            worker_address=f"{advertise}:%port%",
            port=port,
            heartbeat_interval_ms=HEARTBEAT_MS,
        )
        try:
            server = tf.data.experimental.service.WorkerServer(config)
        except Exception as exc:
            raise DataServiceError(f"the worker cannot start on port {port}: {exc}") from exc
        bound = str(server._address).rsplit(":", 1)[1]  # WorkerServer reports localhost:<bound port>
        return f"{advertise}:{bound}", server._stop

    _serve(start, "worker", allowed)


class _Server:
    """A data-service process started by :class:`LocalService`, with its stdout followed on a thread."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._logf = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "suite", "data-service", *args],
            stdout=subprocess.PIPE,
            stderr=self._logf,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def wait_ready(self, timeout_s: float) -> tuple[str, list[int]]:
        """(address, CPUs) from the readiness line.

        Raises:
            DataServiceError: the process exited or stayed silent for ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if line.startswith(READY):
                _, _, address, cpus = line.split()
                return address, parse_cpulist(cpus)
        self.stop()
        tail = self.log.read_text(errors="replace")[-2000:]
        raise DataServiceError(f"`trainbench data-service` did not become ready; its log ({self.log}) ends:\n{tail}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 20 s."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()


class LocalService:
    """A dispatcher and workers as separate processes on this machine, for ``with`` blocks.

    Args:
        worker_cpus: one entry per worker: a cpulist to pin it to, or None.
        log_dir: where the servers' logs go.
        dispatcher_cpus: a cpulist to pin the dispatcher to, or None.

    Attributes:
        address: ``127.0.0.1:PORT`` of the dispatcher (set on entry).
        workers: (address, CPUs) of each worker (set on entry).
        worker_pids: process id of each worker (set on entry).
    """

    def __init__(self, worker_cpus: Sequence[str | None], log_dir: Path, dispatcher_cpus: str | None = None) -> None:
        self.worker_cpus = list(worker_cpus)
        self.dispatcher_cpus = dispatcher_cpus
        self.log_dir = log_dir
        self.address = ""
        self.workers: list[tuple[str, list[int]]] = []
        self.worker_pids: list[int] = []
        self._servers: list[_Server] = []

    def __enter__(self) -> LocalService:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            pin = ["--cpus", self.dispatcher_cpus] if self.dispatcher_cpus else []
            dispatcher = _Server(["dispatcher", "--port", "0", *pin], self.log_dir / "dispatcher.log")
            self._servers.append(dispatcher)
            bound, _ = dispatcher.wait_ready(START_TIMEOUT_S)
            self.address = f"127.0.0.1:{bound.rsplit(':', 1)[1]}"
            for i, cpus in enumerate(self.worker_cpus):
                args = ["worker", "--dispatcher", self.address, "--port", "0", "--advertise", "127.0.0.1"]
                worker = _Server([*args, *(["--cpus", cpus] if cpus else [])], self.log_dir / f"worker{i}.log")
                self._servers.append(worker)
            self.workers = [w.wait_ready(START_TIMEOUT_S) for w in self._servers[1:]]
            self.worker_pids = [w.proc.pid for w in self._servers[1:]]
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        for server in reversed(self._servers):
            server.stop()
        self._servers.clear()
