"""Run MLPerf's official checkers (mlperf-logging) on an export and read what they print.

The checkers' exit status cannot be trusted: ``mlperf_logging.system_desc_checker``
exits 0 after printing ``ERROR`` lines, and crashes (a traceback, still a finding) on a
number where it expects a string. So the verdict here comes from their output: any
``ERROR`` line or traceback is a failure, and the compliance checker must also print
``SUCCESS``. Both run in a child process (they configure the root logger and call
``sys.exit``), with their log files in a temporary directory.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RULESET = "4.0.0"
"""The MLPerf Training ruleset an export targets (open division)."""
CHECKER_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class CheckerReport:
    """What one official checker said about one file.

    Attributes:
        command: the command line that ran (for the record).
        returncode: its exit status (not the verdict: see the module docstring).
        output: everything it printed (stdout then stderr).
        errors: its ``ERROR`` lines, a crash, or the lack of a ``SUCCESS`` line.
        warnings: its ``WARNING`` lines (the compliance checker's warnings do not fail a log).
    """

    command: list[str]
    returncode: int
    output: str
    errors: list[str]
    warnings: list[str]

    @property
    def passed(self) -> bool:
        """True when the checker reported no error (read from its output)."""
        return not self.errors


def _run(args: list[str], needs_success: bool) -> CheckerReport:
    with tempfile.TemporaryDirectory(prefix="trainbench-mlperf-check-") as tmp:
        command = [sys.executable, "-m", *args, "--log_output", str(Path(tmp) / "checker.log")]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=CHECKER_TIMEOUT_S, cwd=tmp)
        except subprocess.TimeoutExpired as exc:
            return CheckerReport(command, -1, str(exc.output or ""), [f"timed out after {CHECKER_TIMEOUT_S:.0f} s"], [])
    output = proc.stdout + proc.stderr
    errors = [line.strip() for line in output.splitlines() if line.lstrip().startswith("ERROR")]
    if "Traceback (most recent call last)" in output:
        errors.append(f"the checker crashed: {output.strip().splitlines()[-1]}")
    if "No module named mlperf_logging" in output:
        errors.append("mlperf-logging is not installed: pip install 'trainbench[mlperf]'")
    if needs_success and "SUCCESS" not in output and not errors:
        errors.append(f"the checker did not report SUCCESS (exit status {proc.returncode})")
    warnings = [line.strip() for line in output.splitlines() if line.lstrip().startswith("WARNING")]
    return CheckerReport(command, proc.returncode, output, errors, warnings)


def check_system_description(path: Path, ruleset: str = RULESET) -> CheckerReport:
    """``python -m mlperf_logging.system_desc_checker PATH training RULESET``."""
    return _run(["mlperf_logging.system_desc_checker", str(path.resolve()), "training", ruleset], needs_success=False)


def check_result_log(path: Path, ruleset: str = RULESET) -> CheckerReport:
    """``python -m mlperf_logging.compliance_checker --usage training --ruleset RULESET PATH``.

    The division (open) and benchmark (resnet) come from the log's own
    ``submission_division`` and ``submission_benchmark`` lines.
    """
    args = ["mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", ruleset, str(path.resolve())]
    return _run(args, needs_success=True)
