"""A result's wall-clock times in order: ``started_at`` is ``origin_unix_s``; every rank's origin, windows and
passes after them (evaluation, loss trajectory) come before ``provenance.created_at``; nothing was created in
the future.

The run writes them from two clocks of its hosts: each rank's origin (``time.time()`` at the
instant its records' ``start_s`` count from) and the supervisor's ``created_at`` once the result is
assembled, truncated to the second. So ``origin + end of the timed work <= created_at + 1 s``, up to
the hosts' clock offset: :data:`CLOCK_TOL_S` on one host, :data:`CLUSTER_CLOCK_TOL_S` for a Slurm
job, whose nodes' clocks are not the submitting host's (NTP keeps them within milliseconds).
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from typing import Any

from harness.records import WindowRecord
from suite.results import Result
from suite.validation.findings import Findings
from workloads.evaluation import EVALUATION_KEY, TRAJECTORY_KEY

TRUNCATION_S = 1.0
"""``created_at`` is written to the second, truncated (``isoformat(timespec="seconds")``)."""
STARTED_AT_TOL_S = 0.0011
"""``started_at`` is ``origin_unix_s`` written to the millisecond, truncated."""
CLOCK_TOL_S = 1.0
"""Clock slack on one host (float rounding and the rank's own ``time.time()`` against the supervisor's)."""
CLUSTER_CLOCK_TOL_S = 5.0
"""Clock slack between a Slurm job's nodes and the submitting host."""
FUTURE_TOL_S = 86_400.0
"""A result may be stamped at most a day ahead of the validator's clock (time zones are explicit: this
is slack for the validator's own clock)."""
FIX = "submit the result as trainbench wrote it; if the hosts' clocks differ, synchronise them (NTP, chrony) and re-run"


def _parse(text: str | None) -> float | None:
    """Seconds since the epoch of an ISO 8601 time with a zone, or None when it is not one."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def _utc(unix_s: float) -> str:
    """``unix_s`` as UTC ISO 8601 to the second, or the number itself where no calendar holds it."""
    try:
        return datetime.fromtimestamp(unix_s, UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return f"{unix_s!r} s since the epoch"


def _end(windows: list[WindowRecord]) -> float:
    return max((w.start_s + w.seconds for w in windows), default=0.0)


ASKED_BY = {EVALUATION_KEY: ("eval_samples", "requested_samples"), TRAJECTORY_KEY: ("trajectory_steps", "steps")}
"""The timed passes a rank runs after its last window, by their ``workload_info`` key (each record has
``start_s`` and ``seconds`` on rank 0's clock): the workload param that asks for the pass (0 or absent: no
pass) and the field of its record that restates that param (``workloads/resnet50_cpu/evaluation.py``,
``workloads/trajectory.py``)."""


def pass_spans(workload_info: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The (start, end) in seconds on rank 0's clock of each timed pass after the windows that ``workload_info``
    records with finite numbers (a pass is missing when it did not run, or its record is not numeric)."""
    out: dict[str, tuple[float, float]] = {}
    for key in ASKED_BY:
        rec = workload_info.get(key)
        if not isinstance(rec, dict):
            continue
        start, seconds = rec.get("start_s"), rec.get("seconds")
        if isinstance(start, int | float) and isinstance(seconds, int | float) and math.isfinite(start + seconds):
            out[key] = (float(start), float(start) + float(seconds))
    return out


def timed_end(windows: list[WindowRecord], workload_info: dict[str, Any] | None) -> float:
    """Where one rank's timed work ends, in seconds from its origin: its last window, or (rank 0, with its
    ``workload_info``) the end of the last pass after the windows."""
    spans = pass_spans(workload_info or {})
    return max(_end(windows), *(end for _, end in spans.values())) if spans else _end(windows)


def _rank_origins(result: Result) -> dict[int, float]:
    """Each rank's origin (``environment.ranks``), rank 0's from ``origin_unix_s`` where the list lacks it."""
    out: dict[int, float] = {}
    for entry in result.environment.get("ranks") or []:
        if isinstance(entry, dict) and isinstance(entry.get("rank"), int):
            origin = entry.get("origin_unix_s")
            if isinstance(origin, int | float) and math.isfinite(origin):
                out[entry["rank"]] = float(origin)
    if result.origin_unix_s is not None:
        out.setdefault(0, result.origin_unix_s)
    return out


def check_timestamps(result: Result, where: str, findings: Findings, now: float | None = None) -> None:
    """``started_at``, the ranks' origins, the windows, the evaluation pass and ``created_at`` agree.

    Args:
        now: the validator's clock, seconds since the epoch (default: ``time.time()``).
    """
    created = _parse(result.provenance.created_at)
    if created is None:
        findings.error(
            "timestamps",
            f"{where}#provenance/created_at",
            f"created_at {result.provenance.created_at[:64]!r} is not an ISO 8601 time with a zone",
            FIX,
        )
        return
    if created > (time.time() if now is None else now) + FUTURE_TOL_S:
        created_at = result.provenance.created_at
        findings.error("timestamps", f"{where}#provenance/created_at", f"created_at {created_at} is in the future", FIX)
    started, origin = _parse(result.started_at), result.origin_unix_s
    if (result.started_at is None) != (origin is None) or (
        origin is not None and (started is None or abs(started - origin) > STARTED_AT_TOL_S)
    ):
        findings.error(
            "timestamps",
            f"{where}#started_at",
            f"started_at {str(result.started_at)[:64]!r} is not origin_unix_s {result.origin_unix_s!r} written as UTC "
            "ISO 8601: the run writes both from the same instant",
            FIX,
        )
    if any(w.start_s < 0 for w in result.windows) or any(s.start_s < 0 for s in result.steps):
        findings.error(
            "timestamps",
            f"{where}#windows",
            "a window or step starts before the run's origin (a negative start_s): the origin is taken first",
            FIX,
        )
    origins = _rank_origins(result)
    if origin is not None and abs(origins.get(0, origin) - origin) > 1e-6:
        findings.error(
            "timestamps",
            f"{where}#environment/ranks/0/origin_unix_s",
            f"rank 0's origin is recorded as {origins[0]!r} among the ranks and as {origin!r} in origin_unix_s: "
            "both are the same instant",
            FIX,
        )
    tol = TRUNCATION_S + (CLUSTER_CLOCK_TOL_S if result.runtime.kind == "slurm" else CLOCK_TOL_S)
    for rank, at in sorted(origins.items()):
        end = timed_end([w for w in result.windows if w.rank == rank], result.workload_info if rank == 0 else None)
        if at + end > created + tol:
            findings.error(
                "timestamps",
                f"{where}#provenance/created_at",
                f"rank {rank}'s timed work ends at {_utc(at + end)} "
                f"({at + end - created:.1f} s after created_at {result.provenance.created_at}), but the "
                "result is written after every rank has finished",
                FIX,
            )
            break
    meas_end = _end([w for w in result.windows if w.rank == 0])
    for key, (start, _) in pass_spans(result.workload_info).items():
        if start < meas_end - 1e-6:
            findings.error(
                "timestamps",
                f"{where}#workload_info/{key}/start_s",
                f"the {key.replace('_', ' ')} pass starts at {start:.3f} s, inside the windows (they end at "
                f"{meas_end:.3f} s): it runs after the last window, outside every timed one",
                FIX,
            )
    for key, (param, field) in ASKED_BY.items():
        rec, asked = result.workload_info.get(key), result.config.params.get(param, 0)
        if isinstance(rec, dict) and "error" not in rec and rec.get(field) != asked:
            # a pass is timed work the sampler runs through: one the config did not ask for would lengthen it
            findings.error(
                "timestamps",
                f"{where}#workload_info/{key}/{field}",
                f"the {key.replace('_', ' ')} pass records {field} = {rec.get(field)!r}, but the config asked for "
                f"{param} = {asked!r}: the rank runs exactly the pass its params ask for",
                FIX,
            )
