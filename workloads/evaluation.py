"""The optional passes a rank runs after its measurement windows: the evaluation, then the loss trajectory.

A workload may override :meth:`harness.workload.Workload.evaluate` (its default returns None:
most workloads have no evaluation pass). The rank calls it once,
after the last measurement window has closed, so it is outside every timed window and
no throughput figure includes it. Its record lands in the result under
``workload_info["evaluation"]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from harness.workload import Workload

EVALUATION_KEY = "evaluation"
"""Key of the evaluation record in a measurement's (and so a result's) ``workload_info``."""

TRAJECTORY_KEY = "loss_trajectory"
"""Key of the loss-trajectory record (:mod:`workloads.trajectory`) in ``workload_info``."""


def run_evaluation(workload: Workload, origin: float) -> dict[str, Any] | None:
    """Run ``workload.evaluate()`` if it has one and return its record, timed.

    Args:
        workload: the built workload, its measurement finished.
        origin: ``time.perf_counter()`` at the run's origin (the harness's), so
            ``start_s`` is on the same clock as the step and window records.

    Returns:
        None when the workload's ``evaluate`` returns None (no evaluation pass, or not
        asked for); else its dict plus ``start_s`` (seconds from the origin) and
        ``seconds`` (wall-clock length of the pass). An evaluation that raises gives
        ``{"error": ...}`` with the same timing keys: the measurement already taken
        stays valid, and no accuracy is made up.
    """
    return timed_pass(workload.evaluate, origin)


def timed_pass(run: Callable[[], dict[str, Any] | None], origin: float) -> dict[str, Any] | None:
    """A pass after the measurement (``run``: the evaluation, the loss trajectory), timed as
    :func:`run_evaluation` describes: None, or its record with ``start_s`` and ``seconds``, or
    ``{"error": ...}`` with them when it raised."""
    start = time.perf_counter()
    try:
        record = run()
    except Exception as exc:
        record = {"error": f"{type(exc).__name__}: {exc}"}
    if record is None:
        return None
    return {**dict(record), "start_s": start - origin, "seconds": time.perf_counter() - start}
