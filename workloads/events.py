"""What a rank tells its supervisor besides its steps: ``events.jsonl``, one JSON object per line.

The progress log (``progress.jsonl``) is a write-ahead log of step records and nothing
else; decisions the supervisor should show before the first step go here instead:

- ``{"event": "precision", ...}``: the precision decision on the rank's host
  (:meth:`harness.precision.PrecisionChoice.to_dict`), written before the workload is built;
- ``{"event": "environment", ...}``: the CPU, its matrix ISA as the run uses it, and torch,
  read back once the workload is built;
- ``{"event": "projection", ...}``: the time projection after the first warm-up step and
  after calibration (:meth:`harness.budget.Projection.to_dict`), with ``cause`` and ``fix``
  in words when the run will overshoot its budget.

Every line also carries ``rank`` and ``t_unix_s``. Writing is best effort: an event that
cannot be written never stops the measurement.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from harness.budget import Projection, floor_per_window, steps_needed
from harness.precision import PrecisionChoice
from harness.records import StepRecord
from harness.windows import RunPlan


def events_path(progress: Path) -> Path:
    """The events file beside a progress log: ``progress[-rank<r>].jsonl`` -> ``events[-rank<r>].jsonl``."""
    name = progress.name
    if name.startswith("progress"):
        return progress.with_name("events" + name[len("progress") :])
    return progress.with_name(f"{progress.stem}.events.jsonl")


class EventLog:
    """Appends events to a file, one flushed JSON line each (a no-op without a path)."""

    def __init__(self, path: Path | None, rank: int) -> None:
        self.rank = rank
        self._file: IO[str] | None = None
        if path is not None:
            with contextlib.suppress(OSError):
                self._file = path.open("a", buffering=1)

    def emit(self, event: str, **fields: Any) -> None:
        """Write ``{"event": event, "rank": ..., "t_unix_s": ..., **fields}`` (errors are ignored)."""
        if self._file is None:
            return
        doc = {"event": event, "rank": self.rank, "t_unix_s": time.time(), **fields}
        with contextlib.suppress(OSError, TypeError, ValueError):
            self._file.write(json.dumps(doc, default=str) + "\n")

    def precision(self, choice: PrecisionChoice | None) -> None:
        """Report the precision decision (and print its warning to the rank's log); None: nothing to report."""
        if choice is None:
            return
        self.emit("precision", **choice.to_dict())
        if choice.warning:
            print(f"warning: {choice.warning}", file=sys.stderr)

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


def overshoot_words(
    p: Projection, choice: PrecisionChoice | None, params: Any, floor_steps: int | None = None
) -> tuple[str, str]:
    """(cause, fix) of a projected overshoot, in words a user can act on.

    The cause names emulated bf16 when that is what the run measures (the usual reason a
    CPU run is slow), else the step time at the run's batch size and precision. The fix
    says what the budget already did and what else helps. ``floor_steps``: the measured
    steps the budget cannot cut below in this run (default: the plan's floor).
    """
    batch = getattr(params, "batch_size", None)
    precision = choice.chosen if choice is not None else getattr(params, "precision", None)
    at = f" at batch {batch}" if batch is not None else ""
    step = f"a step takes {p.step_s:.1f} s{at}" + (f" in {precision}" if precision else "")
    if choice is not None and choice.bf16_emulated:
        return f"bf16 is emulated on this CPU ({choice.reason}); {step}", "--set precision=auto (fp32 here)"
    if p.floor_overshoots:
        floor = f"the budget cannot cut below {floor_steps or p.floor_steps} measured steps"
        half = batch // 2 if isinstance(batch, int) and batch > 1 else None
        smaller = f"--set batch_size={half}" if half else "a smaller batch"
        return step, f"{floor}: {smaller}, or more time (--set budget_s=SECONDS)"
    return step, (
        "the measurement windows are shortened to fit the budget (a wider interval); "
        "for more steps raise budget_s (--set budget_s=SECONDS) or use --profile official"
    )


def projection_fields(p: Projection, plan: RunPlan, choice: PrecisionChoice | None, params: Any) -> dict[str, Any]:
    """The projection event's fields: the projection, ``explain``, ``shortened`` (the budget cut the
    measurement windows below the plan's) and, when over budget or shortened, ``cause`` and ``fix``."""
    shortened = p.stage == "calibrated" and p.measure_steps < steps_needed(plan.measurement, p.step_s)
    out: dict[str, Any] = {**p.to_dict(), "explain": p.explain(), "shortened": shortened}
    if p.over_budget_s > 0 or p.floor_overshoots or shortened:
        floor = p.repeats * min(floor_per_window(plan), steps_needed(plan.measurement, p.step_s))
        out["cause"], out["fix"] = overshoot_words(p, choice, params, floor)
    return out


def environment_fields(system: dict[str, Any]) -> dict[str, Any]:
    """The run header's facts from :func:`harness.system.capture_system`: CPU model, cores, the
    ISA record (features, effective, caps, torch's capability), the torch version and the
    transparent-huge-page facts (:func:`harness.hugepages.thp_facts`)."""
    cpu = system.get("cpu") or {}
    torch = system.get("torch") or {}
    return {
        "hostname": (system.get("host") or {}).get("hostname"),
        "cpu_model": cpu.get("model"),
        "logical_cores": cpu.get("logical_cores"),
        "cpus_allowed": len((system.get("binding") or {}).get("cpus_allowed") or []) or None,
        "isa": system.get("isa"),
        "torch_version": torch.get("version"),
        "torch_cpu_capability": torch.get("cpu_capability"),
        "transparent_hugepages": (system.get("memory") or {}).get("transparent_hugepages"),
    }


def progress_writer(log: IO[str] | None) -> Callable[[StepRecord], None] | None:
    """The rank's ``on_step``: one JSON step record per line of the progress log ``log`` (opened
    line-buffered, so each step reaches the file as it ends); None without a log.

    ``suite.bench.overhead`` times the harness with this very function in the loop.
    """
    if log is None:
        return None

    def on_step(record: StepRecord) -> None:
        log.write(json.dumps(record.to_dict()) + "\n")

    return on_step
