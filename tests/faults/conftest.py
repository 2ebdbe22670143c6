"""Prints the fuzz tests' case count at the end of the session (issue 14's closing note needs it)."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.faults import test_fuzz_hostile

    cases = test_fuzz_hostile.CASES
    if cases["cases"]:
        terminalreporter.write_line(f"structure-aware fuzzing: {cases['cases']} cases, {cases['crashes']} crashes")
