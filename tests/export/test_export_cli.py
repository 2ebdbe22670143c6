"""`trainbench export mlperf` and `trainbench submit --describe-system --mlperf` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import trainbench
from tests.export.conftest import SUBMITTER, SYSTEM


def test_export_mlperf_writes_the_tree_and_the_official_checkers_pass(evaluated_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "mlperf"
    args = ("export", "mlperf", str(evaluated_run), "--output", str(out), "--submitter", SUBMITTER)
    proc = trainbench(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / "systems" / f"{SYSTEM}.json").is_file()
    assert (out / "results" / SYSTEM / "resnet" / "result_0.txt").is_file()
    assert proc.stdout.count("passed: ") == 2 and "FAILED" not in proc.stdout
    assert "MLPerf fields not disclosed" in proc.stdout  # storage, networking, ... are the submitter's to give

    again = trainbench(*args, cwd=tmp_path)
    assert again.returncode == 2 and "already" in again.stderr and "Traceback" not in again.stderr


def test_export_refuses_a_bad_field_and_a_run_without_evaluation(evaluated_run: Path, tmp_path: Path) -> None:
    bad = trainbench(
        "export", "mlperf", str(evaluated_run), "--output", str(tmp_path / "o"), "--mlperf-field", "nope=1",
        cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2 and "nope" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "o").exists()


def test_submit_describe_system_with_mlperf_fields(evaluated_run: Path, tmp_path: Path) -> None:
    root = tmp_path / "submissions"
    proc = trainbench(
        "submit", str(evaluated_run), "--submitter", SUBMITTER, "--system", SYSTEM, "--root", str(root),
        "--describe-system", "--no-price", "a test machine", "--mlperf",
        "--mlperf-field", "status=Research, Development, or Internal (RDI)", "--mlperf-field", "cooling=air",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 1: a tiny run has findings, but the system is written
    doc = json.loads((root / SUBMITTER / "systems" / f"{SYSTEM}.json").read_text())
    assert doc["mlperf"]["cooling"] == "air" and doc["mlperf"]["division"] == "open"
    assert doc["mlperf"]["status"] == "Research, Development, or Internal (RDI)"

    without = trainbench(
        "submit", str(evaluated_run), "--submitter", SUBMITTER, "--system", "x", "--root", str(root), "--mlperf",
        cwd=tmp_path,
    )  # fmt: skip
    assert without.returncode == 2 and "--describe-system" in without.stderr
