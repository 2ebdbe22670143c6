"""Security defaults: the results UI listens on loopback only unless the user says otherwise."""

from __future__ import annotations

import subprocess

from tests.conftest import REPO


def _ui_command(*overrides: str) -> str:
    proc = subprocess.run(["make", "-n", "ui", "VENV=.venv", *overrides], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if " ui " in ln or ln.rstrip().endswith(" ui")]
    return line


def test_mlflow_ui_binds_loopback_by_default() -> None:
    line = _ui_command()
    assert "mlflow ui" in line and "--host 127.0.0.1" in line
    assert "0.0.0.0" not in line


def test_exposing_the_ui_takes_an_explicit_setting() -> None:
    assert "--host 0.0.0.0" in _ui_command("UI_HOST=0.0.0.0")
