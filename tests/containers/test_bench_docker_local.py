"""The docker/local benchmark (``make bench``) against the real engine and the CPU image: a
tiny session end to end. Its figures come from ``make bench``, not from tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from suite.bench.container import describe, measure_container
from tests.bench.test_docker_local import TINY


@pytest.mark.slow
def test_a_tiny_docker_local_session_in_the_real_image(cpu_image: Any, tmp_path: Path) -> None:
    """One session of two one-step pairs, local and in trainbench-cpu: both orders, positive
    throughputs, one quad, an unbounded CI (too few quads), both workers gone afterwards."""
    lines: list[str] = []
    result = measure_container(TINY, tmp_path, lines.append, lines.append)
    assert [p.docker_first for p in result.pairs] == [False, True]
    assert all(p.local > 0 and p.docker > 0 for p in result.pairs)
    assert result.summary is not None and result.summary.n == 1 and result.summary.low is None
    assert len(result.sessions) == 1 and not result.meets_goal
    assert "cannot decide" in describe(result) and "per session" in describe(result)
    assert json.loads(json.dumps(result.to_dict()))["pairs"][1]["docker_first"] is True
    assert (tmp_path / "session1-docker" / "system.json").exists()
