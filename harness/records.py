"""Raw records: every statistic is derived from these, so it can be recomputed later."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Phase(StrEnum):
    """Which window a step belongs to."""

    WARMUP = "warmup"
    MEASUREMENT = "measurement"


@dataclass(frozen=True)
class StepRecord:
    """One optimizer step, as the harness timed it.

    Attributes:
        repeat: 0-based repeat index.
        phase: warm-up or measurement.
        index: 0-based step index within its window.
        start_s: seconds from the start of the run to the moment the harness asked
            the batch iterator for this step's batch.
        data_wait_s: seconds spent inside the batch iterator (``next(batches)``).
        compute_s: seconds spent in ``Workload.step`` (plus ``synchronize`` when the
            workload synchronizes each step).
        samples: samples processed by this step (the local batch size).
        rank: global rank of the process that took the step (0 when not distributed).
        device_s: seconds the device spent on this step, from the workload's device timer
            (:mod:`harness.device_timer`: CUDA events around the step, read at the window's
            closing edge); None where no device timer ran (CPU: the host's times are the
            step's times). ``compute_s`` stays the host's time either way (launch time on a GPU).
    """

    repeat: int
    phase: Phase
    index: int
    start_s: float
    data_wait_s: float
    compute_s: float
    samples: int
    rank: int = 0
    device_s: float | None = None

    @property
    def step_s(self) -> float:
        """Step time in seconds: data wait plus compute."""
        return self.data_wait_s + self.compute_s

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = asdict(self)
        out["phase"] = self.phase.value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> StepRecord:
        """Inverse of :meth:`to_dict`; raises ``KeyError``/``ValueError`` on bad input."""
        return cls(
            repeat=int(raw["repeat"]),
            phase=Phase(raw["phase"]),
            index=int(raw["index"]),
            start_s=float(raw["start_s"]),
            data_wait_s=float(raw["data_wait_s"]),
            compute_s=float(raw["compute_s"]),
            samples=int(raw["samples"]),
            rank=int(raw.get("rank", 0)),
            device_s=None if raw.get("device_s") is None else float(raw["device_s"]),
        )


@dataclass(frozen=True)
class WindowRecord:
    """One window as a whole, timed between synchronized edges.

    Attributes:
        repeat: 0-based repeat index.
        phase: warm-up or measurement.
        start_s: seconds from the start of the run to the window's first edge.
        seconds: wall-clock seconds between the window's two synchronized edges.
            Throughput is computed from this, not from the sum of step times, so
            time spent between steps is never hidden.
        steps: optimizer steps in the window.
        samples: samples processed in the window.
        rank: global rank of the process that timed the window (0 when not distributed).
    """

    repeat: int
    phase: Phase
    start_s: float
    seconds: float
    steps: int
    samples: int
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = asdict(self)
        out["phase"] = self.phase.value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> WindowRecord:
        """Inverse of :meth:`to_dict`; raises ``KeyError``/``ValueError`` on bad input."""
        return cls(
            repeat=int(raw["repeat"]),
            phase=Phase(raw["phase"]),
            start_s=float(raw["start_s"]),
            seconds=float(raw["seconds"]),
            steps=int(raw["steps"]),
            samples=int(raw["samples"]),
            rank=int(raw.get("rank", 0)),
        )
