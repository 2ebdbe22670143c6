"""Helpers for fault tests: start a tiny run in the background, find its rank, run a real MLflow server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import TINY_RUN

EXE = str(Path(sys.executable).parent / "trainbench")


def start_run(tmp_path: Path, *extra: str, tracking: list[str] | None = None) -> subprocess.Popen[str]:
    """Start `trainbench run resnet50-cpu` (tiny settings plus ``extra``) without waiting for it."""
    args = [
        EXE,
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        *extra,
        "--output-dir",
        str(tmp_path / "o"),
        *(tracking or ["--no-tracking"]),
    ]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    return subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def wait_for_measurement(
    tmp_path: Path, timeout: float = 120, steps: int = 1, run: subprocess.Popen[str] | None = None
) -> None:
    """Block until the run's progress log shows ``steps`` measured steps; fail at once if ``run`` has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        logs = list((tmp_path / "o").rglob("progress.jsonl"))
        if logs and logs[0].read_text().count('"measurement"') >= steps:
            return
        if run is not None:
            assert run.poll() is None, run.communicate()
        time.sleep(0.2)
    raise AssertionError(f"the run never measured {steps} step(s)")


def rank_process(run: subprocess.Popen[str]) -> psutil.Process:
    """The rank process started by a `trainbench run` process."""
    for child in psutil.Process(run.pid).children(recursive=True):
        if "workloads.rank" in " ".join(child.cmdline()):
            return child
    raise AssertionError("no rank process found")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MlflowServer:
    """A real `mlflow server` on loopback over a SQLite store, that can be stopped and restarted.

    It runs as ``make ui`` runs it, without MLflow's job consumers (``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``):
    with them, each start cost about 50 CPU-seconds that would disturb the runs under test.
    """

    def __init__(self, root: Path, store: Path | None = None) -> None:
        """``root``: an existing directory for its store (``server.db``) and artifacts; ``store``: an empty,
        migrated store to start from (``tests.conftest.empty_store_template``), else the server creates it."""
        self.root = root
        self.store = store
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120) -> None:
        if self.store is not None and not (self.root / "server.db").exists():
            shutil.copyfile(self.store, self.root / "server.db")
        mlflow = str(Path(sys.executable).parent / "mlflow")
        self.proc = subprocess.Popen(
            [
                mlflow,
                "server",
                "--backend-store-uri",
                f"sqlite:///{self.root / 'server.db'}",
                "--artifacts-destination",
                str(self.root / "artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
            ],
            cwd=self.root,
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        import urllib.request

        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise AssertionError("mlflow server did not become healthy")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            self.proc.wait(timeout=30)
        self.proc = None
