"""Modules are at most 300 lines in harness/, workloads/ and suite/ (shared/DESIGN.md: one home per
concern, no 1,000-line modules): a module past it does several jobs and is split."""

from __future__ import annotations

from tests.conftest import REPO

MAX_LINES = 300
KNOWN_OVER: dict[str, str] = {}
"""Modules over the limit today, each with why; an entry must go once its module fits."""


def test_modules_are_at_most_300_lines() -> None:
    sizes = {
        str(p.relative_to(REPO)): len(p.read_text().splitlines())
        for pkg in ("harness", "workloads", "suite")
        for p in (REPO / pkg).rglob("*.py")
    }
    over = {path: n for path, n in sizes.items() if n > MAX_LINES and path not in KNOWN_OVER}
    assert over == {}, f"split these modules (at most {MAX_LINES} lines each)"
    fitted = [path for path in KNOWN_OVER if sizes.get(path, 0) <= MAX_LINES]
    assert fitted == [], "these modules fit now: remove them from KNOWN_OVER"
