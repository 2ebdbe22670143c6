"""The docker/local benchmark (``make bench``) against the real engine and the CPU image: a
tiny session end to end. Its figures come from ``make bench``, not from tests."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from suite.bench.container import measure_container
from suite.bench.container_result import describe
from tests.bench.test_docker_local import TINY


@pytest.mark.slow
def test_a_tiny_docker_local_session_in_the_real_image(cpu_image: Any, tmp_path: Path) -> None:
    """One session of two one-step pairs, local and in trainbench-cpu: both orders, positive
    throughputs, one quad, an unbounded CI (too few quads), both workers gone afterwards. A second run
    into the same output directory works beside the first (it crashed on the first's worker folders);
    its second session really starts the container's worker first."""
    lines: list[str] = []
    result = measure_container(TINY, tmp_path, lines.append, lines.append)
    assert [p.docker_first for p in result.pairs] == [False, True]
    assert all(p.local > 0 and p.docker > 0 for p in result.pairs)
    assert all((p.local_cores or 0) > 0 and (p.docker_cores or 0) > 0 for p in result.pairs)
    assert "own CPU per block" in describe(result) and "pure-Python loop" in describe(result)
    assert [len(result.python_loop_s[side]) for side in ("local", "docker")] == [1, 1]
    assert result.summary is not None and result.summary.n == 1 and result.summary.low is None
    assert len(result.sessions) == 1 and not result.meets_goal
    assert "cannot decide" in describe(result) and "per session" in describe(result)
    assert json.loads(json.dumps(result.to_dict()))["pairs"][1]["docker_first"] is True
    [first] = list(tmp_path.glob("*/session1-docker/system.json"))
    # the same output directory again, with two sessions: the second starts the container first
    again = measure_container(dataclasses.replace(TINY, sessions=2), tmp_path, lines.append, lines.append)
    assert len(again.pairs) == 4 and all(p.local > 0 and p.docker > 0 for p in again.pairs)
    runs = sorted(tmp_path.glob("*/session1-docker/system.json"))
    assert len(runs) == 2 and first in runs, "each run has its own directory; the first run's files are kept"
    assert again.started_first == ["local", "docker"] and again.balanced
    [run] = [r.parents[1] for r in runs if r != first]
    started = {d.name: (d / "job.json").stat().st_mtime_ns for d in run.iterdir()}
    order = sorted(started, key=started.__getitem__)
    assert order == ["session1-local", "session1-docker", "session2-docker", "session2-local"]
    assert again.summary is not None and again.summary.n == 1  # one order-balanced ratio: two sessions' quads


def test_a_worker_that_fails_in_its_image_keeps_the_overhead_figures_and_exits_1(
    engine: Any, cpu_image: Any, tmp_path: Path
) -> None:
    """The docker/local part run in the offline base image (Debian's python3, no trainbench):
    its worker exits before answering. The command says so with the worker's log, exits 1 without a
    traceback, and bench.json still holds the overhead part measured before it."""
    from suite.containers.images import LOCAL_BASE_IMAGE
    from tests.conftest import trainbench

    engine.images.get(LOCAL_BASE_IMAGE)  # built before every image (make base-image)
    out = tmp_path / "bench"
    tiny = ["--pairs", "2", "--block-steps", "1", "--batch-size", "2", "--image-size", "64"]
    proc = trainbench(
        "bench", "overhead", "docker", *tiny, "--docker-sessions", "1", "--docker-pairs", "2",
        "--image", LOCAL_BASE_IMAGE, "--output-dir", str(out), cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "error: the docker worker exited" in proc.stderr
    # the log's tail says why: the base image has python3 but no `python` (nor trainbench)
    assert "exec python failed" in proc.stderr
    assert "Traceback" not in proc.stderr.split("its log", 1)[0]
    doc = json.loads((out / "bench.json").read_text())
    assert len(doc["overhead"]["pairs"]) == 2 and "exited" in doc["container"]["failed"]
    assert "docker/local: failed" in proc.stdout
