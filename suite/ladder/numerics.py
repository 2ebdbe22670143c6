"""A fast rung must still train the same model: each rung's loss trajectory against the fp32 rung's.

Every rung runs the loss-trajectory pass (``workloads/trajectory.py``): after its measurement,
outside every timed window, its own training step trains :data:`TRAJECTORY_STEPS` steps from
the seeded initial weights on one fixed seeded batch, the same samples in every rung. A rung's
**deviation** is the mean over the steps of ``|loss_rung - loss_fp32|``, divided by the fp32
rung's first loss (about ln 1000 = 6.9 for ImageNet's classes). A rung whose deviation is above
:data:`TOLERANCE`, or whose pass failed or gave a loss that is not finite, is **invalid** and is
never the best config; so is every rung when the fp32 rung has no trajectory to compare with.
MLPerf's closed division asks the same equivalence of a submission.

The tolerance is stated for bf16 and measured here with ``tests/suite/ladder_tolerance_figures.py``
(on "Intel(R) Xeon(R) Processor" with avx512_bf16 and amx_bf16, 2 vCPUs, torch 2.14.1, 2026-11-27):
the real trajectory pass of a tiny ResNet-50 (32 x 32 images, 1000 classes, 8 steps, seeds 0-2),
the largest deviation of an honest variant (bf16 autocast, channels_last, both, the batch doubled
with each sample twice, bf16 with it) and the smallest of a broken one (the learning rate doubled,
halved, tenfold):

==========================================  =======  =========  ========  ========  =========
SGD                                         samples  honest <=  lr x2 >=  lr /2 >=  lr x10 >=
==========================================  =======  =========  ========  ========  =========
resnet50-cpu's (lr 0.001)                   4        0.092      0.154     0.136     0.333
resnet50-cpu's                              8        0.054      0.127     0.055     0.504
resnet50-gpu-horovod's (lr 0.01, mom. 0.9)  4        0.382      0.304     0.113     2.217
resnet50-gpu-horovod's                      8        0.162      0.109     0.058     2.087
resnet50-gpu-horovod's                      16       0.035      0.108     0.074     1.292
resnet50-gpu-horovod's                      32       0.029      0.099     0.103     0.428
==========================================  =======  =========  ========  ========  =========

With few samples and momentum the fp32 trajectory itself oscillates (memorising a handful of
samples overshoots), and honest rungs drift apart. So each ladder needs a least number of
distinct samples (``Ladder.min_trajectory_samples``): 8 for the CPU ladder, 16 for the GPU
ladder, where honest rungs stayed within 0.054 and 0.035. The tolerance, 0.10, leaves them a
margin of 1.85x or more, refuses a tenfold learning rate everywhere, and a doubled one in every
setting measured up to 16 samples (with 32 the loss falls more slowly in 8 steps: 0.099). On a GPU
the trajectory batch is in the hundreds (128 for the default batch-size search).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from suite.results import Result
from workloads.evaluation import TRAJECTORY_KEY

TRAJECTORY_STEPS = 8
"""Steps of every rung's loss-trajectory pass (the measurements above used 8)."""

TOLERANCE = 0.10
"""The largest deviation (mean |loss - fp32's| over the steps / fp32's first loss) of a valid rung."""


@dataclass(frozen=True)
class NumericsCheck:
    """One rung's loss trajectory against the fp32 rung's.

    Attributes:
        status: ``reference`` (the fp32 rung), ``ok`` (within the tolerance) or ``invalid``.
        deviation: mean |loss - fp32's| / fp32's first loss (None when not compared).
        tolerance: :data:`TOLERANCE`.
        losses: the rung's losses, one per step (None where not finite), or None without a trajectory.
        reason: why the rung is invalid, in words (None when it is not).
    """

    status: str
    deviation: float | None
    tolerance: float
    losses: list[float | None] | None
    reason: str | None = None

    @property
    def valid(self) -> bool:
        """The rung trains the same model (it may be the best config)."""
        return self.status in ("reference", "ok")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ``valid``."""
        return {**asdict(self), "valid": self.valid}


def trajectory(result: Result | None) -> tuple[dict[str, Any] | None, str | None]:
    """A result's trajectory record, or None and why there is none."""
    if result is None:
        return None, "the rung gave no result"
    record = result.workload_info.get(TRAJECTORY_KEY)
    if not isinstance(record, dict):
        return None, "the run recorded no loss trajectory"
    if record.get("error"):
        return None, f"its loss-trajectory pass failed: {record['error']}"
    losses = record.get("losses")
    if not isinstance(losses, list) or not losses:
        return None, "its loss trajectory holds no losses"
    return record, None


def _finite(losses: list[Any]) -> bool:
    return all(isinstance(v, int | float) and math.isfinite(v) for v in losses)


def deviation(reference: list[float], losses: list[float]) -> float:
    """Mean over the steps of ``|losses - reference|``, divided by ``reference[0]`` (the module docstring).

    Raises:
        ValueError: the two have different lengths, or the reference's first loss is not positive.
    """
    if len(reference) != len(losses) or not reference:
        raise ValueError(f"trajectories of {len(reference)} and {len(losses)} steps cannot be compared")
    if reference[0] <= 0:
        raise ValueError(f"the reference's first loss is {reference[0]}; it must be positive")
    return sum(abs(a - b) for a, b in zip(reference, losses, strict=True)) / len(losses) / reference[0]


def check(reference: Result | None, result: Result | None, is_reference: bool) -> NumericsCheck:
    """``result``'s loss trajectory against ``reference``'s (the fp32 rung's); ``is_reference``: it is the fp32 rung."""
    mine, why = trajectory(result)
    losses = mine["losses"] if mine is not None else None
    if mine is None:
        return NumericsCheck("invalid", None, TOLERANCE, None, f"{why}: it cannot show it trains the same model")
    if not _finite(mine["losses"]):
        return NumericsCheck("invalid", None, TOLERANCE, losses, "a loss of its trajectory is NaN or infinite")
    if is_reference:
        return NumericsCheck("reference", 0.0, TOLERANCE, losses)
    ref, why = trajectory(reference)
    if ref is None or not _finite(ref["losses"]):
        why = why or "a loss of its trajectory is NaN or infinite"
        return NumericsCheck("invalid", None, TOLERANCE, losses, f"no fp32 trajectory to compare with ({why})")
    same = ("steps", "distinct_samples", "seed")
    if any(ref.get(k) != mine.get(k) for k in same):
        theirs = ", ".join(f"{k} {mine.get(k)} vs fp32's {ref.get(k)}" for k in same if ref.get(k) != mine.get(k))
        return NumericsCheck("invalid", None, TOLERANCE, losses, f"its trajectory is not fp32's ({theirs})")
    dev = deviation(ref["losses"], mine["losses"])
    if dev > TOLERANCE:
        return NumericsCheck(
            "invalid",
            dev,
            TOLERANCE,
            losses,
            f"its loss trajectory deviates from fp32's by {dev:.1%} of the first loss, above the {TOLERANCE:.0%} "
            "tolerance: it does not train the same model",
        )
    return NumericsCheck("ok", dev, TOLERANCE, losses)
