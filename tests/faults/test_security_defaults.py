"""Security defaults: the results UI listens on loopback only unless the user says otherwise."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

from tests.conftest import REPO
from tests.faults.helpers import free_port

VENV = str(Path(sys.executable).parent.parent)


def _ui_command(*overrides: str) -> str:
    proc = subprocess.run(["make", "-n", "ui", f"VENV={VENV}", *overrides], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if " ui " in ln or ln.rstrip().endswith(" ui")]
    return line


def _listening(root: psutil.Process, port: int) -> list[str]:
    """Addresses that ``root`` or its children listen on at ``port``."""
    found = []
    for p in [root, *root.children(recursive=True)]:
        try:
            conns = p.net_connections(kind="inet")
        except psutil.Error:
            continue
        found += [c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
    return found


def test_mlflow_ui_binds_loopback_by_default(tmp_path: Path) -> None:
    """The command `make ui` runs, started for real: it serves on 127.0.0.1 and on nothing else.

    It also starts none of MLflow's job consumers (huey), which the results UI never uses and which
    would otherwise keep two vCPUs busy for about 25 s beside a benchmark.
    """
    port = free_port()
    line = _ui_command(f"UI_PORT={port}", f"MLFLOW_TRACKING_URI=sqlite:///{tmp_path / 'ui.db'}")
    assert "mlflow ui" in line and "--host 127.0.0.1" in line and "0.0.0.0" not in line
    assert "MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false" in line
    log = tmp_path / "ui.log"
    with log.open("w") as sink:
        server = subprocess.Popen(shlex.split(line), cwd=tmp_path, stdout=sink, stderr=sink, start_new_session=True)
    try:
        root = psutil.Process(server.pid)
        deadline = time.monotonic() + 120
        addresses: list[str] = []
        while time.monotonic() < deadline and server.poll() is None and not addresses:
            addresses = _listening(root, port)
            time.sleep(0.5)
        assert addresses, f"the UI never listened on port {port}: {log.read_text()[-3000:]}"
        assert set(addresses) == {"127.0.0.1"}, addresses
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                    assert resp.status == 200
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        commands = [" ".join(p.cmdline()) for p in root.children(recursive=True)]
        assert not [c for c in commands if "huey" in c or "_job_runner" in c], commands
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_exposing_the_ui_takes_an_explicit_setting() -> None:
    assert "--host 0.0.0.0" in _ui_command("UI_HOST=0.0.0.0")
    assert "MLFLOW_SERVER_ENABLE_JOB_EXECUTION=true" in _ui_command("MLFLOW_SERVER_ENABLE_JOB_EXECUTION=true")
