"""Fixtures for the container tests: a real Docker engine and the real images.

Without a reachable engine, the tests that need one are skipped with the reason.
``.ci/run`` starts an engine, builds the images, and sets ``TRAINBENCH_REQUIRE_DOCKER=1``
so that in CI a missing engine or image fails instead of skipping.

An image is used only if it matches this checkout: the fixture runs
``trainbench images build NAME``, which reuses an image whose inputs are unchanged
(about a second) and otherwise rebuilds what changed (the dependency layers come
from the engine's cache). A developer who never built the image gets a skip that
says ``make images``, rather than a silent multi-gigabyte build.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import REPO, trainbench

REQUIRED = os.environ.get("TRAINBENCH_REQUIRE_DOCKER") == "1"


def _skip_or_fail(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (TRAINBENCH_REQUIRE_DOCKER=1: CI must run the container tests)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    """A Docker SDK client for a reachable engine (skip, or fail in CI, without one)."""
    from suite.containers.engine import connect
    from suite.containers.errors import EngineUnavailableError

    try:
        client = connect(timeout_s=10)
    except EngineUnavailableError as exc:
        _skip_or_fail(f"no Docker engine: {exc}")
    yield client
    client.close()


def _ensure(engine: Any, name: str) -> Any:
    """The image ``name`` built from this checkout (reused when its inputs are unchanged)."""
    if not REQUIRED and not engine.images.list(name=name):
        _skip_or_fail(f"image {name} is not built here; run `make images` to run the container tests")
    proc = trainbench("images", "build", name, cwd=REPO, timeout=3600)
    assert proc.returncode == 0, f"trainbench images build {name} failed:\n{proc.stdout[-4000:]}\n{proc.stderr}"
    return engine.images.get(f"{name}:latest")


@pytest.fixture(scope="session")
def cpu_image(engine: Any) -> Any:
    """The trainbench-cpu image of this checkout (docker.models.images.Image)."""
    return _ensure(engine, "trainbench-cpu")


@pytest.fixture(scope="session")
def gpu_image(engine: Any) -> Any:
    """The trainbench-gpu image of this checkout (docker.models.images.Image)."""
    return _ensure(engine, "trainbench-gpu")
